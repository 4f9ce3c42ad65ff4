import MarkdownIt from 'markdown-it';
const md = new MarkdownIt({ linkify: true, typographer: true });
print(md.render('# T\n\n"quoted" -- see https://example.com and **b**\n\n1. one\n2. two\n'));
