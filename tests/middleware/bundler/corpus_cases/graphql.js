import { buildSchema, graphqlSync, parse, print as gprint } from 'graphql';
const schema = buildSchema('type Query { hello(name: String): String, n: Int }');
const r = graphqlSync({ schema, source: '{ hello(name: "x") n }', rootValue: { hello: ({ name }) => 'hi ' + name, n: 3 } });
print(JSON.stringify(r));
print(gprint(parse('query Q($a:Int){f(a:$a){g}}')).replace(/\n/g, '|'));
print(JSON.stringify(graphqlSync({ schema, source: '{ nope }' }).errors.map((e) => e.message)));
