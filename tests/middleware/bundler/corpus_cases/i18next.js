import i18next from 'i18next';
const i = i18next.createInstance();
globalThis.__wait = i.init({ lng: 'en', initImmediate: false, showSupportNotice: false,
  resources: { en: { translation: { hi: 'Hello {{name}}', n_one: '{{count}} item', n_other: '{{count}} items' } } } })
  .then((t) => print(t('hi', { name: 'W' }) + ' ' + t('n', { count: 1 }) + ' ' + t('n', { count: 3 }) + ' ' + t('missing')));
