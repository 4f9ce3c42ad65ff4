/* csgi bundler live reload: with the live_reload option the server appends this to require.js.
 * csgiRequire.live([onchange]) follows <mount>/~live and, once a burst of edits has settled,
 * reloads the page or calls onchange(sequence number); csgiRequire.events is the EventSource. */
csgiRequire.live = (onchange) => {
  if (typeof EventSource === 'undefined') return null;
  const es = (csgiRequire.events = new EventSource(csgiRequire.base() + '/~live'));
  let timer = null;
  es.addEventListener('change', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => (onchange ? onchange(Number(e.data)) : location.reload()), 50);
  });
  return es;
};
csgiRequire.live();
