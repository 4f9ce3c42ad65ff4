import axios from 'axios';
const api = axios.create({ baseURL: 'https://api.example/v1', params: { k: 1 } });
print(api.getUri({ url: '/items', params: { q: 'a b' } }));
print(axios.isAxiosError(new axios.AxiosError('x')) + ' ' + typeof axios.CancelToken + ' ' + Object.keys(axios.defaults.headers.common).join(','));
globalThis.__wait = api.get('/x', { adapter: (cfg) => Promise.resolve({ data: { url: cfg.url, m: cfg.method }, status: 200, headers: {}, config: cfg }) })
  .then((r) => print(JSON.stringify(r.data)));
