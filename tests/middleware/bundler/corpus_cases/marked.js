import { marked } from 'marked';
print(marked.parse('# Title\n\nSome *emph* and `code`.\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n'));
print(JSON.stringify(marked.lexer('**b**').map((t) => t.type)));
