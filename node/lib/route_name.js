'use strict';
// The name a route's limits count under (`<name>:<key>`), the same in every adapter of every language: the route's
// path template as its framework writes it, with each parameter written `:name` — Express's and Fastify's
// `/users/:id(\\d+)`, Flask's `/users/<int:id>`, Starlette's `/users/{id:int}`, Django's `users/<int:id>/` all name
// `/users/:id`. A trailing `/` is dropped. The twin of python/src/ratewarden/_route_name.py; both run
// tests/conformance/route_names.json.

const WORD = /[A-Za-z0-9_]/;

// The index after the regex group that opens at text[i] === '(': nested groups, escapes and classes.
function groupEnd(text, i) {
  let depth = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '[') {
      i = text.indexOf(']', text[i + 1] === ']' ? i + 2 : i + 1);
      if (i < 0) return n;
    } else if (c === '(') {
      depth++;
    } else if (c === ')') {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return n;
}

const isWord = (s) => s.length > 0 && [...s].every((ch) => WORD.test(ch));

function routeName(template) {
  let t = template;
  if (t.startsWith('^')) t = t.slice(1);
  for (const end of ['\\Z', '$']) if (t.endsWith(end)) t = t.slice(0, -end.length);
  const out = [];
  const n = t.length;
  let i = 0;
  while (i < n) {
    let c = t[i];
    const close = c === '<' ? '>' : c === '{' ? '}' : undefined;
    if (close !== undefined && t.indexOf(close, i) > i + 1) {
      const inner = t.slice(i + 1, t.indexOf(close, i));
      const name = c === '<' ? inner.slice(inner.lastIndexOf(':') + 1) : inner.split(':')[0];
      if (isWord(name)) {  // <int:id>, <id>, {id}, {id:int}
        out.push(`:${name}`);
        i += inner.length + 2;
        continue;
      }
    }
    if (c === '(') {
      const end = groupEnd(t, i);
      const named = t.startsWith('(?P<', i) ? t.indexOf('>', i) : -1;
      if (named > i + 4) out.push(`:${t.slice(i + 4, named)}`);  // a named regex group
      else if (!(out.length > 0 && out[out.length - 1].startsWith(':'))) out.push(':_');  // after :id it only constrains :id
      i = end;
      continue;
    }
    if (c === ':' && i + 1 < n && WORD.test(t[i + 1])) {  // :id
      let j = i + 1;
      while (j < n && WORD.test(t[j])) j++;
      out.push(t.slice(i, j));
      i = j;
      continue;
    }
    if (c === '\\' && i + 1 < n) c = t[++i];  // an escaped character of a regex route
    out.push(c);
    i++;
  }
  let name = out.join('');
  if (!name.startsWith('/')) name = `/${name}`;
  if (name.length > 1 && name.endsWith('/')) name = name.slice(0, -1);
  return name;
}

module.exports = { routeName };
