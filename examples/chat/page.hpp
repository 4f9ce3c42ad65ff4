#pragma once
// The chat's page: log in, then post to /say with the CSRF token and read the room through SSE (/events).
#include <string_view>

inline constexpr std::string_view chat_page = R"(<!doctype html><meta charset=utf-8><title>chat</title>
<h1>chat</h1>
<form id=login><input name=name placeholder="your name" required maxlength=32><button>log in</button></form>
<form id=say hidden><input id=text autocomplete=off placeholder="say something" required><button>send</button></form>
<pre id=log></pre>
<script>
const room = new URLSearchParams(location.search).get('room') || 'lobby';
const log = (s) => document.getElementById('log').textContent += s + '\n';
let token = '';
async function ready() {
  const me = await fetch('me');
  if (!me.ok) return;
  log('* you are ' + (await me.json()).name);
  token = (await (await fetch('csrf')).json()).token;
  document.getElementById('login').hidden = true;
  document.getElementById('say').hidden = false;
}
document.getElementById('login').onsubmit = async (e) => {
  e.preventDefault();
  await fetch('login', {method: 'POST', body: new URLSearchParams(new FormData(e.target))});
  ready();
};
document.getElementById('say').onsubmit = async (e) => {
  e.preventDefault();
  const t = document.getElementById('text');
  const r = await fetch('say?room=' + encodeURIComponent(room), {method: 'POST',
    headers: {'Content-Type': 'application/json', 'X-CSRF-Token': token}, body: JSON.stringify({text: t.value})});
  if (!r.ok) log('* ' + r.status + ' ' + (await r.text()));
  t.value = '';
};
new EventSource('events?room=' + encodeURIComponent(room)).onmessage = (e) => {
  const m = JSON.parse(e.data); log(m.from + ': ' + m.text);
};
ready();
</script>)";
