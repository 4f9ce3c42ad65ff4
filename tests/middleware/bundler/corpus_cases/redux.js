import { legacy_createStore as createStore, combineReducers, applyMiddleware, compose } from 'redux';
const log = [];
const mw = () => (next) => (action) => { log.push(action.type); return next(action); };
const store = createStore(combineReducers({ n: (s = 0, a) => (a.type === 'inc' ? s + 1 : s) }), applyMiddleware(mw));
store.dispatch({ type: 'inc' }); store.dispatch({ type: 'inc' });
print(JSON.stringify(store.getState()) + ' ' + log.join(',') + ' ' + typeof compose());
try { store.dispatch('bad'); } catch (e) { print(e.message.slice(0, 50)); }
