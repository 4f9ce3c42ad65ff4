/* csgi bundler live reload: with the live_reload option the server appends this to require.js.
 * csgiRequire.live([onchange]) follows <mount>/~live and, once a burst of edits has settled,
 * reloads the page or calls onchange(sequence number); csgiRequire.events is the EventSource. An edit
 * of stylesheets only (event `css`) replaces the text of their <style> elements without a reload (a
 * CSS module's while its name map, data-csgi-names, is the one the server answers now). */
csgiRequire.live = (onchange) => {
  if (typeof EventSource === 'undefined') return null;
  const es = (csgiRequire.events = new EventSource(csgiRequire.base() + '/~live'));
  let timer = null;
  es.addEventListener('change', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => (onchange ? onchange(Number(e.data)) : location.reload()), 50);
  });
  // Stylesheets only: their <style> elements take the new text; the page stays (reloads if that fails).
  es.addEventListener('css', (e) => {
    for (const path of JSON.parse(e.data)) {
      const style = [...document.querySelectorAll('style[data-csgi-css]')].find((s) => s.getAttribute('data-csgi-css') === path);
      if (!style) continue;
      fetch(csgiRequire.base() + '/~css/' + path.split('/').map(encodeURIComponent).join('/'))
        .then((r) => {
          const same = r.headers.get('X-Bundle-Css-Names') === style.getAttribute('data-csgi-names');
          return r.ok && same ? r.text() : Promise.reject(new Error(r.status));
        })
        .then((text) => { style.textContent = text; }, () => location.reload());
    }
  });
  return es;
};
csgiRequire.live();
