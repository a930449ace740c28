"""JavaScript's side of the split run: the candidate's server and the tests' proxy (node).

The codec maps numbers that are safe integers to `i`, other numbers to `d` (JavaScript has one
number type: 3 and 3.0 are the same value there), strings, booleans, null (`n`), undefined (`v`),
arrays (`l`), Sets (`e`) and plain objects (`m`); a Map, an object without a prototype, an
array's hole and -0 cross as typed values (`g s3:Map m..`, `NullObject`, `Hole`, `NegativeZero`),
which `deepStrictEqual` tells apart from the plain object, `{}`, `undefined` and 0. Anything else
(a function, a class instance, a subclass or changed prototype, a BigInt) is not plain data. The proxy decodes each back into its
own type (an untagged `m` into a plain object when its keys are strings, else a Map). Arrays,
Sets, Maps and plain objects cross as one graph shared by the proxy and the server (`bsMessage`):
identity, key order, an array's own properties and frozenness cross, and every change a call
makes to an object that crossed is applied to the tests' objects. A reply is
`a l2 <returned value> <changed objects>` (engine.sandbox.arguments).
"""
from __future__ import annotations

from engine.sandbox.programs import shell_script
from engine.sandbox.proxies.javascript_graph import GRAPH
from engine.sandbox.relay import SandboxProgram

CODEC = r"""
const bsFs = require('fs');
class BsNotPlain extends Error {}
// Plain data is decided by exact prototype and internal type, with the built-ins as they are
// before the candidate loads (it may replace `Object.getPrototypeOf` or `Array.isArray`): an
// array is one only with Array.prototype, a Set or Map only with its own prototype and no own
// property at all (the graph carries none of theirs), an object only with Object.prototype or
// none. A subclass, a changed prototype or a Proxy is not plain data (`deepStrictEqual` tells it
// apart from the plain value it would cross as).
const bsGetProto = Object.getPrototypeOf, bsIsArray = Array.isArray, bsOwnKeys = Reflect.ownKeys;
const bsOwnNames = Object.getOwnPropertyNames, bsOwnSymbols = Object.getOwnPropertySymbols, bsDescriptor = Object.getOwnPropertyDescriptor;
const bsKeys = Object.keys, bsIsFrozen = Object.isFrozen, bsIsExtensible = Object.isExtensible;
// A key set as an own data property, as JSON.parse and an object literal's computed key make it:
// assignment would call a setter on the prototype (`__proto__` changes the prototype instead).
const bsDefine = Object.defineProperty;
function bsSetKey(o, k, v) { bsDefine(o, k, { value: v, writable: true, enumerable: true, configurable: true }); }
const bsArrayProto = Array.prototype, bsSetProto = Set.prototype, bsMapProto = Map.prototype, bsObjectProto = Object.prototype;
const { isProxy: bsIsProxy, isSet: bsIsSet, isMap: bsIsMap, isDate: bsIsDate, isRegExp: bsIsRegExp,
        isBoxedPrimitive: bsIsBoxed, isArrayBufferView: bsIsView, isAnyArrayBuffer: bsIsBuffer, isNativeError: bsIsError,
        isPromise: bsIsPromise, isWeakMap: bsIsWeakMap, isWeakSet: bsIsWeakSet } = require('util').types;
function bsPlainKind(v) {
  if (v === null || typeof v !== 'object' || bsIsProxy(v)) return null;
  const proto = bsGetProto(v);
  if (bsIsArray(v)) return proto === bsArrayProto ? 'Array' : null;
  if (bsIsSet(v)) return proto === bsSetProto && bsOwnKeys(v).length === 0 ? 'Set' : null;
  if (bsIsMap(v)) return proto === bsMapProto && bsOwnKeys(v).length === 0 ? 'Map' : null;
  if (proto !== bsObjectProto && proto !== null) return null;
  // A built-in given Object's prototype keeps its internal type (a Date would cross as `{}`).
  if (bsIsDate(v) || bsIsRegExp(v) || bsIsBoxed(v) || bsIsView(v) || bsIsBuffer(v) || bsIsError(v) || bsIsPromise(v)
      || bsIsWeakMap(v) || bsIsWeakSet(v)) return null;
  return proto === null ? 'NullObject' : 'Object';
}
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
  // The loose assertions ignore an array's prototype, as they do an object's.
  const kind = loose && bsIsArray(v) && !bsIsProxy(v) ? 'Array' : bsPlainKind(v);
  // An array's own properties besides its indices are not written here: node's own assertion decides.
  if (kind === 'Array' && bsOwnKeys(v).some((k) => k !== 'length' && !(typeof k === 'string' && bsIsIndex(k))))
    throw new BsNotPlain('an array with own properties besides its indices');
  if (kind === 'Array') { tag = 'l'; items = []; for (let i = 0; i < v.length; i++) items.push(i in v ? v[i] : HOLE); }
  else if (kind === 'Set') { tag = 'e'; items = Array.from(v); }
  else if (kind === 'Map') { tag = 'm'; items = []; for (const [k, x] of v) items.push(k, x); bsTagged('Map', out); inner++; }
  else if (kind === 'Object' || kind === 'NullObject') {
    tag = 'm'; items = []; for (const k of Object.keys(v)) items.push(k, v[k]);
    if (kind === 'NullObject' && !loose) { bsTagged('NullObject', out); inner++; }
  } else {
    throw new BsNotPlain('a ' + t + ' that is not a plain array, Set, Map or object (a subclass, another prototype, '
                         + 'an own property of a Set or Map) is not plain data');
  }
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
      for (let i = 0; i < items.length; i += 2) bsSetKey(o, items[i], items[i + 1]);
      return [o, end];
    }
    const m = new Map(); for (let i = 0; i < items.length; i += 2) m.set(items[i], items[i + 1]); return [m, end];
  }
  return [items, end];
}
""" + GRAPH + r"""
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
  bsForget();
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
