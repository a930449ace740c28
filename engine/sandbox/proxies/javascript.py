"""JavaScript's side of the split run: the candidate's server and the tests' proxy (node).

The codec maps numbers that are safe integers to `i`, other numbers to `d` (JavaScript has one
number type: 3 and 3.0 are the same value there), strings, booleans, null (`n`), undefined (`v`),
arrays (`l`), Sets (`e`) and plain objects (`m`); a Map, an object without a prototype, an
array's hole and -0 cross as typed values (`g s3:Map m..`, `NullObject`, `Hole`, `NegativeZero`),
which `deepStrictEqual` tells apart from the plain object, `{}`, `undefined` and 0. Anything else
(a function, a class instance, a BigInt) is not plain data. The proxy decodes each back into its
own type (an untagged `m` into a plain object when its keys are strings, else a Map). A call
that left its arguments changed answers `a` with their state after it, which the proxy copies
back into the tests' arrays, objects, Sets and Maps (engine.sandbox.arguments).
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
  return names.join(' ') + '\n' + message;
}
let bsFn;
try { bsFn = require('./candidate.js'); } catch (e) { process.stderr.write('the candidate did not load: ' + e + '\n'); }
for (;;) {
  const call = bsRecv(3);
  if (call === null) process.reallyExit(0);
  if (typeof bsFn !== 'function') { bsSend(4, 'z ' + bsText('no function to call')); continue; }
  const args = bsRead(call, 0)[0];
  const before = [];
  bsWrite(args, before, 0);  // as this process writes them, to tell whether the call changed them
  let value;
  try { value = bsFn(...args); } catch (e) { bsSend(4, 'x ' + bsText(bsErrorText(e))); continue; }
  const out = [], after = [];
  try { bsWrite(value, out, 0); bsWrite(args, after, 0); } catch (e) { bsSend(4, 'z ' + bsText(String(e && e.message))); continue; }
  // A call that changed its arguments answers their state too (engine.sandbox.arguments).
  if (after.join('') === before.join('')) bsSend(4, 'o ' + out.join(''));
  else bsSend(4, 'a l2 ' + out.join('') + ' ' + after.join(''));
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
  const out = [];
  try { bsWrite(Array.from(args), out, 0); } catch (e) {
    // Never the proxy's own error inside the tests (`assert.throws(fn)` would take it for the
    // candidate's): the engine makes the run an error (`u <why>`), and the harness exits failed.
    bsSend(5, 'u ' + String(e && e.message));
    bsRecv(6);
    bsBroken = 'the tests pass a value the wire cannot carry: ' + String(e && e.message);
    throw new BsCandidateBroken(bsBroken);
  }
  bsSend(5, out.join(''));
  const reply = bsRecv(6);
  if (reply === null) { bsBroken = 'the engine closed the call channel'; throw new BsCandidateBroken(bsBroken); }
  const [value] = bsRead(reply, 2);
  if (reply[0] === 0x6f) return value;
  if (reply[0] === 0x61) {
    // The candidate changed its arguments: the tests' objects change the same way, as in one process.
    for (let i = 0; i < args.length; i++) bsRestore(args[i], value[1][i]);
    return value[0];
  }
  if (reply[0] === 0x78) throw bsThrown(value);
  bsBroken = value;
  throw new BsCandidateBroken(value);
};
let bsBroken = '';
// `o` (the tests' object) made equal to `c` in place, keeping each nested array, object, Set or
// Map that is still where it was; true when done in place.
function bsPlainObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Set) && !(v instanceof Map); }
function bsRestore(o, c) {
  if (Array.isArray(o) && Array.isArray(c)) {
    if (o.length !== c.length) { o.length = 0; for (const x of c) o.push(x); return true; }
    for (let i = 0; i < c.length; i++) if (!bsRestore(o[i], c[i])) o[i] = c[i];
    return true;
  }
  if (o instanceof Set && c instanceof Set) { o.clear(); for (const x of c) o.add(x); return true; }
  if (o instanceof Map && c instanceof Map) { o.clear(); for (const [k, x] of c) o.set(k, x); return true; }
  if (bsPlainObject(o) && bsPlainObject(c)) {
    for (const k of Object.keys(o)) if (!(k in c)) delete o[k];
    for (const k of Object.keys(c)) if (!bsRestore(o[k], c[k])) o[k] = c[k];
    return true;
  }
  return false;
}
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
require('./program.js');
if (bsBroken) { process.stderr.write('candidate broken: ' + bsBroken + '\n'); process.reallyExit(1); }
bsWriteSync(4, Buffer.concat([bsToken, Buffer.from(' passed\n')]));
process.reallyExit(0);
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
