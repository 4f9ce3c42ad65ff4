import DOMPurify from 'dompurify';
print(DOMPurify.sanitize('<img src=x onerror=alert(1)><b onclick="x()">ok</b><script>1</script><a href="javascript:1">l</a>'));
print(DOMPurify.isSupported + ' ' + DOMPurify.sanitize('<p>x</p>', { ALLOWED_TAGS: [] }));
