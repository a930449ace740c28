"""JavaScript's shared graph (node), the part of engine.sandbox.proxies.javascript's codec that
keeps identity across the split run: every plain array, Set, Map and object that crossed, by
number, on both sides; a message carries the state of each one that is new or changed
(`bsMessage`), and the receiver applies it in place (`bsApply`). docs/sandbox.md, "The shared
graph", has the wire.
"""
from __future__ import annotations

GRAPH = r"""
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
const bsObjs = [], bsLast = [], bsSnaps = [];
let bsIds = new Map();
function bsReset() { bsObjs.length = 0; bsLast.length = 0; bsSnaps.length = 0; bsIds = new Map(); }
function bsId(o) {
  let rid = bsIds.get(o);
  if (rid === undefined) { rid = bsObjs.length; bsIds.set(o, rid); bsObjs.push(o); bsLast.push(null); bsSnaps.push(null); }
  return rid;
}
function bsIsGraph(v) { return bsPlainKind(v) !== null; }
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
// An object's shallow state as one flat list, read at every message (a prototype changed or a
// Set's property added after the object crossed is seen as well): its kind, frozenness, then an
// array's length, items (bsHole for a hole) and other keys with values; a Set's items; a Map's or
// an object's keys and values in order. Its text (bsStateText) is made from this list alone, so an
// object whose list is the same item for item (Object.is) as at the last message is unchanged
// without writing its text; a frozen array or object cannot change at all.
function bsShallow(o) {
  const kind = bsPlainKind(o);
  if (kind === null) throw new BsNotPlain('an object of the graph is not plain data (a prototype other than its kind\'s, an own property of a Set or Map)');
  if (bsOwnSymbols(o).length) throw new BsNotPlain('an object with a symbol key is not plain data');
  const frozen = bsIsFrozen(o);
  if (!frozen && !bsIsExtensible(o)) throw new BsNotPlain('a sealed or non-extensible object is not plain data');
  const snap = [kind, frozen];
  if (kind === 'Set') { for (const x of Array.from(o)) snap.push(x); return snap; }
  if (kind === 'Map') { for (const [k, x] of Array.from(o)) snap.push(k, x); return snap; }
  const isArray = kind === 'Array';
  let at = 2;
  if (isArray) {
    const length = o.length;
    snap.push(length);
    for (let i = 0; i < length; i++) snap.push(bsHole);
    at = 3;
  }
  // An array's own keys are its indices in ascending order, then `length`, then its other keys
  // in the order they were added.
  const names = bsOwnNames(o);
  let n = 0;
  if (isArray) {
    for (; n < names.length && names[n] !== 'length'; n++) {
      const d = bsDescriptor(o, names[n]);
      if (!d.enumerable || d.get || d.set) throw new BsNotPlain('an object with a non-enumerable or accessor property (' + names[n] + ') is not plain data');
      snap[at + Number(names[n])] = d.value;
    }
    n++;
  }
  for (; n < names.length; n++) {
    const d = bsDescriptor(o, names[n]);
    if (!d.enumerable || d.get || d.set) throw new BsNotPlain('an object with a non-enumerable or accessor property (' + names[n] + ') is not plain data');
    snap.push(names[n], d.value);
  }
  return snap;
}
function bsSameShallow(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}
function bsStateText(snap) {
  const kind = snap[0];
  let text;
  if (kind === 'Array') {
    const length = snap[2];
    const parts = ['l' + length];
    for (let i = 3; i < 3 + length; i++) { parts.push(' '); if (snap[i] === bsHole) parts.push('g s4:Hole v'); else bsGWrite(snap[i], parts); }
    text = parts.join('');
    if (snap.length > 3 + length) text = 'g s10:ArrayProps l2 ' + text + ' ' + bsPairs(snap.slice(3 + length));
  } else if (kind === 'Set') text = 'g s3:Set ' + bsPairs(snap.slice(2));
  else if (kind === 'Map') text = 'g s3:Map ' + bsPairs(snap.slice(2));
  else text = (kind === 'NullObject' ? 'g s10:NullObject ' : 'g s6:Object ') + bsPairs(snap.slice(2));
  return snap[1] ? 'g s6:Frozen ' + text : text;
}
// The text of object `i` when it changed since the last message (else null), its state kept.
function bsChanged(i) {
  const old = bsSnaps[i];
  if (old !== null && old[1] && old[0] !== 'Set' && old[0] !== 'Map') return null;
  const snap = bsShallow(bsObjs[i]);
  if (old !== null && bsSameShallow(old, snap)) return null;
  bsSnaps[i] = snap;
  const text = bsStateText(snap);
  if (text === bsLast[i]) return null;
  bsLast[i] = text;
  return text;
}
function bsForget() { bsLast.fill(null); bsSnaps.fill(null); }
// `args`: the value is the call's argument list, written in place (never an object of the graph).
function bsMessage(value, args) {
  const out = [];
  if (args) out.push(bsPairs(value)); else bsGWrite(value, out);
  const nodes = [];
  for (let i = 0; i < bsObjs.length; i++) {  // objects met while writing are appended: each is written once
    const text = bsChanged(i);
    if (text !== null) nodes.push(' l2 i' + i + ' ' + text);
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
// A node's state as written by bsStateText, read back: [kind, items, props, frozen].
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
    else if (!(rid >= 0 && rid < bsObjs.length) || bsPlainKind(bsObjs[rid]) !== node[0]) throw new Error('a node that is no object of the graph');
    nodes.push([rid, node]);
  }
  for (const [rid, [kind, items, props, frozen]] of nodes) {
    const o = bsObjs[rid];
    if (kind === 'Array') {
      o.length = 0;
      for (let i = 0; i < items.length; i++) if (i in items) o[i] = bsResolve(items[i]);
      o.length = items.length;
      for (const k of Object.keys(o)) if (!bsIsIndex(k)) delete o[k];
      for (let i = 0; i < props.length; i += 2) bsSetKey(o, props[i], bsResolve(props[i + 1]));
    } else if (kind === 'Set') {
      o.clear();
      for (const x of items) o.add(bsResolve(x));
    } else if (kind === 'Map') {
      o.clear();
      for (let i = 0; i < items.length; i += 2) o.set(bsResolve(items[i]), bsResolve(items[i + 1]));
    } else {
      for (const k of Object.keys(o)) delete o[k];  // then set again in the sender's order
      for (let i = 0; i < items.length; i += 2) bsSetKey(o, String(items[i]), bsResolve(items[i + 1]));
    }
    if (frozen) Object.freeze(o);
  }
  for (const [rid] of nodes) { bsSnaps[rid] = null; bsChanged(rid); }
  return Array.isArray(value) ? value.map(bsResolve) : bsResolve(value);  // a call's argument list, else one value
}
"""
