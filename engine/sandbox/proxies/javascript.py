"""JavaScript's side of the split run: the candidate's server and the tests' proxy (node).

The codec maps numbers that are safe integers to `i`, other numbers to `d` (JavaScript has one
number type: 3 and 3.0 are the same value there), strings, booleans, null (`n`), undefined (`v`),
arrays (`l`), Sets (`e`) and plain objects (`m`); a Map, an object without a prototype, an
array's hole and -0 cross as typed values (`g s3:Map m..`, `NullObject`, `Hole`, `NegativeZero`),
which `deepStrictEqual` tells apart from the plain object, `{}`, `undefined` and 0. Anything else
(a function, a class instance, a BigInt) is not plain data. The proxy decodes each back into its
own type (an untagged `m` into a plain object when its keys are strings, else a Map). Arrays,
Sets, Maps and plain objects cross as one graph shared by the proxy and the server (`bsMessage`):
identity, key order, an array's own properties and frozenness cross, and every change a call
makes to an object that crossed is applied to the tests' objects. A reply is
`a l2 <returned value> <changed objects>` (engine.sandbox.arguments).
"""
from __future__ import annotations

from engine.sandbox.programs import shell_script
from engine.sandbox.relay import SandboxProgram

CODEC = r"""
const bsFs = require('fs');
class BsNotPlain extends Error {}
// Values deepStrictEqual tells apart from another of the same shape cross with a type name
// (`g s3:Map m1 ...`): a Map, an object without a prototype, an array's hole, -0. `loose` (the
// tests' equal/deepEqual, which take -0 for 0 and ignore prototypes) writes those two untagged.
function bsTagged(name, out) { out.push('g ' + bsText(name) + ' '); }
function bsWrite(v, out, depth, loose) {
  if (depth > 32) throw new BsNotPlain('nested deeper than 32 levels');
  if (v === null) { out.push('n'); return; }
  if (v === undefined) { out.push('v'); return; }
  const t = typeof v;
  if (t === 'boolean') { out.push(v ? 't' : 'f'); return; }
  // A BigInt would cross as the number of the same value (`3n` passing for `3`): not plain data.
  if (t === 'bigint') throw new BsNotPlain('a BigInt is not plain data (it would cross as a number)');
  if (t === 'number') {
    if (Object.is(v, -0) && !loose) { bsTagged('NegativeZero', out); out.push('i0'); }
    else if (Number.isSafeInteger(v)) out.push('i' + BigInt(v).toString());
    else if (Number.isNaN(v)) out.push('dnan');
    else if (v === Infinity) out.push('dinf');
    else if (v === -Infinity) out.push('d-inf');
    else out.push('d' + String(v));
    return;
  }
  // UTF-8 cannot carry a lone surrogate (Buffer writes U+FFFD for it, so '\uD83D' would equal '\uFFFD').
  if (t === 'string') {
    if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(v))
      throw new BsNotPlain('a string with a lone surrogate is not plain data (UTF-8 cannot carry it)');
    out.push('s' + Buffer.byteLength(v, 'utf8') + ':' + v); return;
  }
  let tag, items, inner = depth;
  const HOLE = bsHole;
  if (Array.isArray(v)) { tag = 'l'; items = []; for (let i = 0; i < v.length; i++) items.push(i in v ? v[i] : HOLE); }
  else if (v instanceof Set) { tag = 'e'; items = Array.from(v); }
  else if (v instanceof Map) { tag = 'm'; items = []; for (const [k, x] of v) items.push(k, x); bsTagged('Map', out); inner++; }
  else if (t === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
    tag = 'm'; items = []; for (const k of Object.keys(v)) items.push(k, v[k]);
    if (Object.getPrototypeOf(v) === null && !loose) { bsTagged('NullObject', out); inner++; }
  } else throw new BsNotPlain('a ' + t + ' is not plain data');
  out.push(tag + (tag === 'm' ? items.length / 2 : items.length));
  for (const item of items) {
    out.push(' ');
    if (item === HOLE) { bsTagged('Hole', out); out.push('v'); }
    else bsWrite(item, out, inner + 1, loose);
  }
}
const bsHole = Symbol('hole');
// Decoding never throws (inside the tests a `catch` would take the error for an answer): a
// typed value of an unknown name decodes as its value.
function bsRead(buf, pos, inArray, as) {
  if (buf[pos] === 0x73) {
    const colon = buf.indexOf(0x3a, pos);
    const end = colon + 1 + Number(buf.toString('ascii', pos + 1, colon));
    return [buf.toString('utf8', colon + 1, end), end];
  }
  let end = buf.indexOf(0x20, pos);
  if (end < 0) end = buf.length;
  const tok = buf.toString('ascii', pos, end);
  if (tok === 'n') return [null, end];
  if (tok === 'v') return [undefined, end];
  if (tok === 't') return [true, end];
  if (tok === 'f') return [false, end];
  if (tok === 'g') {
    const [name, at] = bsRead(buf, end + 1);
    const [value, after] = bsRead(buf, at + 1, false, name);
    if (name === 'NegativeZero') return [-0, after];
    if (name === 'Hole') return [inArray ? bsHole : undefined, after];
    if (name === 'r') return [new BsRef(value), after];
    return [value, after];
  }
  if (tok[0] === 'i') return [Number(tok.slice(1)), end];
  if (tok[0] === 'd') {
    const text = tok.slice(1);
    return [text === 'nan' ? NaN : text === 'inf' ? Infinity : text === '-inf' ? -Infinity : Number(text), end];
  }
  const n = Number(tok.slice(1)) * (tok[0] === 'm' ? 2 : 1);
  const items = [];
  const list = tok[0] === 'l' || tok[0] === 'u';
  for (let i = 0; i < n; i++) {
    const [x, p] = bsRead(buf, end + 1, list);
    if (x !== bsHole) items[i] = x;
    end = p;
  }
  items.length = n;
  if (tok[0] === 'e') return [new Set(items), end];
  if (tok[0] === 'm') {
    const keys = items.filter((_, i) => i % 2 === 0);
    if (as !== 'Map' && keys.every((k) => typeof k === 'string')) {
      const o = as === 'NullObject' ? Object.create(null) : {};
      for (let i = 0; i < items.length; i += 2) o[items[i]] = items[i + 1];
      return [o, end];
    }
    const m = new Map(); for (let i = 0; i < items.length; i += 2) m.set(items[i], items[i + 1]); return [m, end];
  }
  return [items, end];
}
// The shared graph: every array, Set, Map and plain object that crossed, by number, on both
// sides, so that identity crosses as it would in one process. A message is `l2 <value> <nodes>`:
// in the value each such object is a reference `g s1:r i<number>`, and each node `l2 i<number>
// <state>` is the state (references inside) of an object that is new or changed since the last
// message: `g s6:Object`, `g s10:NullObject` or `g s3:Map` of a list of keys and values in their
// order, `g s3:Set` of a list, an array's list (`g s10:ArrayProps l2 <list> <keys and values>` when
// it has properties besides its indices), inside `g s6:Frozen` when frozen. Key order, an array's
// own properties and frozenness are part of the value; a non-enumerable or accessor property, a
// symbol key and a sealed or non-extensible object are not plain data. Numbers are given in
// order of first appearance, so sender and receiver agree on them, and so do a reference and a
// candidate that return the same sharing structure.
class BsRef { constructor(rid) { this.rid = rid; } }
const bsObjs = [], bsLast = [];
let bsIds = new Map();
function bsReset() { bsObjs.length = 0; bsLast.length = 0; bsIds = new Map(); }
function bsId(o) {
  let rid = bsIds.get(o);
  if (rid === undefined) { rid = bsObjs.length; bsIds.set(o, rid); bsObjs.push(o); bsLast.push(null); }
  return rid;
}
function bsIsGraph(v) {
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v) || v instanceof Set || v instanceof Map) return true;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
function bsGWrite(v, out) {
  if (bsIsGraph(v)) out.push('g s1:r i' + bsId(v));
  else bsWrite(v, out, 0);
}
function bsIsIndex(k) { const n = Number(k) >>> 0; return String(n) === k && n !== 4294967295; }
function bsPairs(pairs) {
  const out = ['l' + pairs.length];
  for (const x of pairs) { out.push(' '); bsGWrite(x, out); }
  return out.join('');
}
function bsNode(o) {
  const isArray = Array.isArray(o);
  for (const k of Object.getOwnPropertyNames(o)) {
    if (isArray && k === 'length') continue;
    const d = Object.getOwnPropertyDescriptor(o, k);
    if (!d.enumerable || d.get || d.set) throw new BsNotPlain('an object with a non-enumerable or accessor property (' + k + ') is not plain data');
  }
  if (Object.getOwnPropertySymbols(o).length) throw new BsNotPlain('an object with a symbol key is not plain data');
  const frozen = Object.isFrozen(o);
  if (!frozen && !Object.isExtensible(o)) throw new BsNotPlain('a sealed or non-extensible object is not plain data');
  let text;
  if (isArray) {
    const items = [];
    for (let i = 0; i < o.length; i++) items.push(i in o ? o[i] : bsHole);
    const parts = ['l' + items.length];
    for (const x of items) { parts.push(' '); if (x === bsHole) parts.push('g s4:Hole v'); else bsGWrite(x, parts); }
    text = parts.join('');
    const extra = Object.keys(o).filter((k) => !bsIsIndex(k));
    if (extra.length) text = 'g s10:ArrayProps l2 ' + text + ' ' + bsPairs(extra.flatMap((k) => [k, o[k]]));
  } else if (o instanceof Set) text = 'g s3:Set ' + bsPairs(Array.from(o));
  else if (o instanceof Map) text = 'g s3:Map ' + bsPairs(Array.from(o).flat());
  else text = (Object.getPrototypeOf(o) === null ? 'g s10:NullObject ' : 'g s6:Object ') + bsPairs(Object.keys(o).flatMap((k) => [k, o[k]]));
  return frozen ? 'g s6:Frozen ' + text : text;
}
// `args`: the value is the call's argument list, written in place (never an object of the graph).
function bsMessage(value, args) {
  const out = [];
  if (args) out.push(bsPairs(value)); else bsGWrite(value, out);
  const nodes = [];
  for (let i = 0; i < bsObjs.length; i++) {  // objects met while writing are appended: each is written once
    const text = bsNode(bsObjs[i]);
    if (text !== bsLast[i]) { bsLast[i] = text; nodes.push(' l2 i' + i + ' ' + text); }
  }
  return 'l2 ' + out.join('') + ' l' + nodes.length + nodes.join('');
}
function bsResolve(v) {
  if (v instanceof BsRef) {
    if (!(v.rid >= 0 && v.rid < bsObjs.length)) throw new Error('a reference to no object');
    return bsObjs[v.rid];
  }
  return v;
}
// A node's state as written by bsNode, read back: [kind, items, props, frozen].
function bsReadNode(buf, pos) {
  let frozen = false, kind = 'Array', at = pos;
  for (;;) {
    if (buf.toString('ascii', at, at + 2) !== 'g ') break;
    const [name, p] = bsRead(buf, at + 2);
    at = p + 1;
    if (name === 'Frozen') frozen = true;
    else { kind = name; break; }
  }
  const [value, end] = bsRead(buf, at, true);
  if (!Array.isArray(value)) throw new Error('a node that is not a list');
  if (kind === 'ArrayProps') return [['Array', value[0], value[1], frozen], end];
  return [[kind, value, [], frozen], end];
}
const bsMake = { Array: () => [], Object: () => ({}), NullObject: () => Object.create(null), Map: () => new Map(), Set: () => new Set() };
function bsKindOf(o) {
  if (Array.isArray(o)) return 'Array';
  if (o instanceof Set) return 'Set';
  if (o instanceof Map) return 'Map';
  return Object.getPrototypeOf(o) === null ? 'NullObject' : 'Object';
}
// A message `l2 <value> <nodes>` from `pos`: its nodes applied in place to the graph's objects
// (each keeps its identity; new ones are made), then its value.
function bsApply(buf, pos) {
  if (buf.toString('ascii', pos, pos + 3) !== 'l2 ') throw new Error('a message is l2 <value> <nodes>');
  let [value, at] = bsRead(buf, pos + 3, true);  // an argument list keeps its holes' places
  let end = buf.indexOf(0x20, at + 1);
  if (end < 0) end = buf.length;
  const count = Number(buf.toString('ascii', at + 2, end));
  const nodes = [];
  at = end;
  for (let i = 0; i < count; i++) {
    if (buf.toString('ascii', at, at + 5) !== ' l2 i') throw new Error('a node is l2 i<number> <state>');
    const space = buf.indexOf(0x20, at + 5);
    const rid = Number(buf.toString('ascii', at + 5, space));
    const [node, p] = bsReadNode(buf, space + 1);
    at = p;
    if (!(node[0] in bsMake)) throw new Error('a node of no known kind');
    if (rid === bsObjs.length) bsId(bsMake[node[0]]());
    else if (!(rid >= 0 && rid < bsObjs.length) || bsKindOf(bsObjs[rid]) !== node[0]) throw new Error('a node that is no object of the graph');
    nodes.push([rid, node]);
  }
  for (const [rid, [kind, items, props, frozen]] of nodes) {
    const o = bsObjs[rid];
    if (kind === 'Array') {
      o.length = 0;
      for (let i = 0; i < items.length; i++) if (i in items) o[i] = bsResolve(items[i]);
      o.length = items.length;
      for (const k of Object.keys(o)) if (!bsIsIndex(k)) delete o[k];
      for (let i = 0; i < props.length; i += 2) o[props[i]] = bsResolve(props[i + 1]);
    } else if (kind === 'Set') {
      o.clear();
      for (const x of items) o.add(bsResolve(x));
    } else if (kind === 'Map') {
      o.clear();
      for (let i = 0; i < items.length; i += 2) o.set(bsResolve(items[i]), bsResolve(items[i + 1]));
    } else {
      for (const k of Object.keys(o)) delete o[k];  // then set again in the sender's order
      for (let i = 0; i < items.length; i += 2) o[String(items[i])] = bsResolve(items[i + 1]);
    }
    if (frozen) Object.freeze(o);
  }
  for (const [rid] of nodes) bsLast[rid] = bsNode(bsObjs[rid]);
  return Array.isArray(value) ? value.map(bsResolve) : bsResolve(value);  // a call's argument list, else one value
}
function bsSend(fd, payload) {
  const body = Buffer.from(payload, 'utf8');
  let data = Buffer.concat([Buffer.from(body.length + '\n'), body]);
  while (data.length) data = data.subarray(bsFs.writeSync(fd, data));
}
function bsRecv(fd) {
  const one = Buffer.alloc(1);
  let header = '';
  while (!header.endsWith('\n')) {
    if (bsFs.readSync(fd, one, 0, 1, null) === 0) return null;
    header += one.toString('ascii');
  }
  const size = Number(header.trim());
  const data = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const n = bsFs.readSync(fd, data, got, size - got, null);
    if (n === 0) return null;
    got += n;
  }
  return data;
}
function bsText(s) { return 's' + Buffer.byteLength(s, 'utf8') + ':' + s; }
"""

SERVER = CODEC + r"""
// The built-in error types as they are before the candidate loads: a thrown value crosses as one
// of them only when its own prototype IS that type's prototype (`x RangeError Error\n<message>`);
// a class of the candidate's, whatever its name (a local `class RangeError`), crosses as
// `user:<name>` followed by its built-in bases, a thrown non-Error as `user:<its type>`.
const bsErrorNames = new Map();
for (const name of ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError', 'AggregateError'])
  if (typeof globalThis[name] === 'function') bsErrorNames.set(globalThis[name].prototype, name);
const bsProtoOf = Object.getPrototypeOf, bsOwn = Object.getOwnPropertyDescriptor;
const bsTypes = require('util').types;
function bsUserName(proto) {
  const c = bsOwn(proto, 'constructor');
  const n = c && typeof c.value === 'function' ? bsOwn(c.value, 'name') : undefined;
  return 'user:' + (n && typeof n.value === 'string' ? n.value : 'anonymous');
}
function bsErrorText(e) {
  const names = [];
  let message = '';
  try {
    if (e === null || (typeof e !== 'object' && typeof e !== 'function')) names.push('user:' + (e === null ? 'null' : typeof e));
    else if (bsTypes.isProxy(e)) names.push('user:Proxy');
    else {
      for (let p = bsProtoOf(e); p !== null && names.length < 16; p = bsProtoOf(p)) {
        if (bsTypes.isProxy(p)) { names.push('user:Proxy'); break; }
        names.push(bsErrorNames.has(p) ? bsErrorNames.get(p) : bsUserName(p));
      }
      const m = bsOwn(e, 'message');
      if (m && typeof m.value === 'string') message = m.value.slice(0, 4096);
    }
  } catch (_) { names.length = 0; names.push('user:anonymous'); }
  if (!names.length) names.push('user:null');
  // Spaces separate the names: one inside a name (a class named 'Oops RangeError') would add a base.
  return names.map((name) => String(name).replace(/\s/g, '_') || '_').join(' ') + '\n' + message;
}
let bsFn;
try { bsFn = require('./candidate.js'); } catch (e) { process.stderr.write('the candidate did not load: ' + e + '\n'); }
for (;;) {
  const call = bsRecv(3);
  if (call === null) process.reallyExit(0);
  if (typeof bsFn !== 'function') { bsSend(4, 'z ' + bsText('no function to call')); continue; }
  let args;
  try {
    if (call.toString('ascii', 0, 7) === 'g s1:c ') args = bsApply(call, 7);  // the tests' call, their objects' changes first
    else { bsReset(); args = bsRead(call, 0)[0]; bsMessage(args, true); }  // a bare argument list (generated inputs)
  } catch (e) { bsSend(4, 'z ' + bsText('the call does not decode: ' + String(e && e.message))); continue; }
  let value;
  try { value = bsFn(...args); } catch (e) { bsSend(4, 'x ' + bsText(bsErrorText(e))); continue; }
  // The returned value and every crossed object the call changed, as one graph (engine.sandbox.arguments).
  let reply;
  try { reply = 'a ' + bsMessage(value); } catch (e) { bsSend(4, 'z ' + bsText(String(e && e.message))); continue; }
  bsSend(4, reply);
}
"""

# The tests' harness: the token before the tests, the verdict after them, the proxy in between.
TESTS_HARNESS = CODEC + r"""
const bsToken = bsFs.readFileSync(3);
bsFs.closeSync(3);
const bsWriteSync = bsFs.writeSync;
class BsCandidateBroken extends Error {}
// The built-in error types the proxy throws, as they are before the tests run.
const bsErrors = {};
for (const name of ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError', 'AggregateError'])
  if (typeof globalThis[name] === 'function') bsErrors[name] = globalThis[name];
// The candidate's exception (`<own name> <bases>...\n<message>`, engine.sandbox.plain.exception_text)
// as the tests see it in one process: a built-in as itself, a class of the candidate's as a class
// of its name extending its nearest built-in base (`assert.throws(fn, RangeError)` takes a subclass
// of RangeError, never a local class of that name), a thrown non-Error as a plain object.
function bsThrown(text) {
  const cut = text.indexOf('\n');
  const names = (cut < 0 ? text : text.slice(0, cut)).split(' ');
  const message = cut < 0 ? '' : text.slice(cut + 1);
  if (Object.hasOwn(bsErrors, names[0])) return names[0] === 'AggregateError' ? new bsErrors.AggregateError([], message) : new bsErrors[names[0]](message);
  const short = names[0].startsWith('user:') ? names[0].slice(5) : names[0];
  const base = names.slice(1).find((n) => Object.hasOwn(bsErrors, n));
  if (base === undefined) return { name: short, message };
  const Base = bsErrors[base];
  const Kind = { [short]: class extends Base {} }[short];
  return base === 'AggregateError' ? new Kind([], message) : new Kind(message);
}
globalThis.__babelscoreCall = function (args) {
  let call;
  try { call = 'g s1:c ' + bsMessage(Array.from(args), true); } catch (e) {
    // Never the proxy's own error inside the tests (`assert.throws(fn)` would take it for the
    // candidate's): the engine makes the run an error (`u <why>`), and the harness exits failed.
    bsSend(5, 'u ' + String(e && e.message));
    bsRecv(6);
    bsBroken = 'the tests pass a value the wire cannot carry: ' + String(e && e.message);
    throw new BsCandidateBroken(bsBroken);
  }
  bsSend(5, call);
  const reply = bsRecv(6);
  if (reply === null) { bsBroken = 'the engine closed the call channel'; throw new BsCandidateBroken(bsBroken); }
  if (reply[0] === 0x61) {
    // The returned value and the changes to the tests' objects, identity kept.
    try { return bsApply(reply, 2); } catch (e) { bsBroken = 'the reply does not decode: ' + e.message; throw new BsCandidateBroken(bsBroken); }
  }
  // No graph came back: the server may have changed objects it did not report, so the next call sends every state again.
  bsLast.fill(null);
  const [value] = bsRead(reply, 2);
  if (reply[0] === 0x78) throw bsThrown(value);
  bsBroken = value;
  throw new BsCandidateBroken(value);
};
let bsBroken = '';
// The equality assertions of node:assert, decided by the engine's typed comparison: both sides
// go to the engine as plain values (`c l2 <actual> <expected>`), never compared by JavaScript.
const bsAssert = require('assert');
function bsSame(a, b, loose) {
  const x = [], y = [];
  try { bsWrite(a, x, 1, loose); bsWrite(b, y, 1, loose); } catch (e) { if (e instanceof BsNotPlain) return null; throw e; }
  bsSend(5, 'c l2 ' + x.join('') + ' ' + y.join(''));
  const reply = bsRecv(6);
  if (reply === null) { bsBroken = 'the engine closed the call channel'; throw new BsCandidateBroken(bsBroken); }
  return reply.toString('latin1') === 'o t';
}
// equal/deepEqual (and their `not` forms) are loose outside `assert/strict`, where they are the strict ones.
function bsTypedAssert(strictMode) {
  const typed = Object.assign(function assert(value, message) { return bsAssert(value, message); }, bsAssert);
  for (const [name, negated, loose] of [['equal', false, true], ['strictEqual', false, false], ['deepEqual', false, true],
                                        ['deepStrictEqual', false, false], ['notEqual', true, true], ['notStrictEqual', true, false],
                                        ['notDeepEqual', true, true], ['notDeepStrictEqual', true, false]]) {
    typed[name] = function (actual, expected, message) {
      const same = bsSame(actual, expected, loose && !strictMode);
      if (same === null) return bsAssert[negated ? 'notDeepStrictEqual' : 'deepStrictEqual'](actual, expected, message);
      if (same === negated) throw new bsAssert.AssertionError({ actual, expected, operator: name, message });
    };
  }
  return typed;
}
const bsTyped = bsTypedAssert(false);
const bsTypedStrict = bsTypedAssert(true);
bsTyped.strict = bsTypedStrict;
bsTypedStrict.strict = bsTypedStrict;
const bsModule = require('module');
const bsLoad = bsModule._load;
bsModule._load = function (request, ...rest) {
  if (['assert', 'node:assert'].includes(request)) return bsTyped;
  if (['assert/strict', 'node:assert/strict'].includes(request)) return bsTypedStrict;
  return bsLoad.call(this, request, ...rest);
};
// The verdict comes when the tests' process ends, not when their module returns: after its timers,
// promises, async functions, node:test's tests and its own 'exit' listeners (node emits 'exit'
// once the event loop is empty, or from process.exit), and only with exit code 0: an uncaught
// exception, an unhandled rejection, a failed node:test test or an 'exit' listener that throws
// ends it otherwise. The tests' own process.exit(0) is a pass, as in one process: the candidate
// is not in this process (its exit ends only its server, and the next call stops the tests).
const bsEmit = process.emit, bsReallyExit = process.reallyExit;
let bsEnded = false;
process.emit = function (event, ...rest) {
  const result = bsEmit.call(this, event, ...rest);
  if (event !== 'exit' || bsEnded) return result;
  bsEnded = true;
  if (bsBroken) { process.stderr.write('candidate broken: ' + bsBroken + '\n'); bsReallyExit.call(process, 1); }
  if (rest[0] === 0 && (process.exitCode === undefined || process.exitCode === 0)) {
    bsWriteSync(4, Buffer.concat([bsToken, Buffer.from(' passed\n')]));
    bsReallyExit.call(process, 0);
  }
  return result;
};
require('./program.js');
"""


def jobs(task: dict, code: str) -> tuple[SandboxProgram, SandboxProgram]:
    context = task.get("context") or ""
    entry = task["entry_point"]
    candidate = (f"{context}\n\n{code}\n\n"
                 f"module.exports = (typeof {entry} === 'function') ? {entry} : undefined;\n")
    proxy = f"function {entry}(...args) {{ return globalThis.__babelscoreCall(args); }}\n"
    server = SandboxProgram({"server.js": SERVER, "candidate.js": candidate}, shell_script("", "/usr/bin/node --max-old-space-size=256 server.js"))
    program = f"{context}\n\n{proxy}\n{task['tests']}\n"
    tests = SandboxProgram({"harness.js": TESTS_HARNESS, "program.js": program}, shell_script("", "/usr/bin/node --max-old-space-size=256 harness.js"))
    return server, tests
