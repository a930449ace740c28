"""Rust's side of the split run: the candidate's server and the tests' proxy (rustc, edition 2021).

The codec is two traits in a module `bs`: `Put` (bool, every integer type, f32 (`g s3:f32`)/f64,
char as a one-character string, str/String, slices, Vec, Option (`g s4:Some` around an Option or
`()`), tuples of 2 and 3, HashMap, HashSet, BTreeMap, BTreeSet, references to those) and `Get`
(the owned ones, and `&str`/`&[T]` as leaked copies; an integer out of the declared type's range
is refused). The server decodes each argument into the owned form of its
declared type (`&str` -> String, `&[T]`/`&Vec<T>` -> Vec<T>) and passes a reference where the
signature takes one; the proxy has the task's signature and `Get`s its return type by inference.
A call that changed a `&mut` argument answers `a` with the arguments' state after it; the proxy
writes it into the tests' own value (engine.sandbox.arguments).
"""
from __future__ import annotations

import re

from engine.sandbox import syntax
from engine.sandbox.programs import RUSTC_FLAGS
from engine.sandbox.relay import SandboxProgram

CODEC = r'''
#[allow(dead_code)]
mod bs {
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
    use std::hash::Hash;
    use std::io::{Read, Write};

    // `empty_able`: the type writes `n` for one of its values (an Option, `()`), so an Option
    // holding one writes `Some` as `g s4:Some <value>` (Some(None) and Some(()) are not None).
    pub trait Put { fn put(&self, o: &mut String); fn empty_able() -> bool where Self: Sized { false } }
    pub trait Get: Sized { fn get(r: &mut Reader) -> Result<Self, String>; fn empty_able() -> bool { false } }
    pub struct Reader<'a> { pub s: &'a [u8], pub p: usize }

    impl<'a> Reader<'a> {
        pub fn token(&mut self) -> String {
            let end = self.s[self.p..].iter().position(|&c| c == b' ').map(|i| self.p + i).unwrap_or(self.s.len());
            let t = String::from_utf8_lossy(&self.s[self.p..end]).into_owned();
            self.p = end;
            t
        }
        pub fn skip(&mut self) { if self.p < self.s.len() && self.s[self.p] == b' ' { self.p += 1; } }
        pub fn count(&mut self, tag: char) -> Result<usize, String> {
            let t = self.token();
            if !t.starts_with(tag) { return Err(format!("expected '{}', got {}", tag, t)); }
            t[1..].parse::<usize>().map_err(|e| e.to_string())
        }
        pub fn string(&mut self) -> Result<String, String> {
            if self.p >= self.s.len() || self.s[self.p] != b's' { return Err("expected a string".into()); }
            let colon = self.s[self.p..].iter().position(|&c| c == b':').ok_or("no length")? + self.p;
            let n: usize = String::from_utf8_lossy(&self.s[self.p + 1..colon]).parse().map_err(|_| "bad length")?;
            let v = String::from_utf8(self.s[colon + 1..colon + 1 + n].to_vec()).map_err(|_| "not UTF-8")?;
            self.p = colon + 1 + n;
            Ok(v)
        }
    }

    macro_rules! ints { ($($t:ty),*) => { $(
        impl Put for $t { fn put(&self, o: &mut String) { o.push('i'); o.push_str(&self.to_string()); } }
        impl Get for $t { fn get(r: &mut Reader) -> Result<Self, String> {
            let t = r.token();
            if !t.starts_with('i') { return Err(format!("expected an integer, got {}", t)); }
            t[1..].parse::<$t>().map_err(|e| e.to_string())
        } }
    )* } }
    ints!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
    // An f32 is `g s3:f32 <float>`: the value verdict compares it at an f32's resolution (engine.sandbox.compare).
    macro_rules! floats { ($($t:ty, $tag:expr),*) => { $(
        impl Put for $t { fn put(&self, o: &mut String) {
            o.push_str($tag);
            if self.is_nan() { o.push_str("dnan") } else if self.is_infinite() { o.push_str(if *self > 0.0 { "dinf" } else { "d-inf" }) }
            else { o.push('d'); o.push_str(&format!("{:?}", self)); }
        } }
        impl Get for $t { fn get(r: &mut Reader) -> Result<Self, String> {
            if !$tag.is_empty() && r.s[r.p..].starts_with($tag.as_bytes()) { r.p += $tag.len(); }
            let t = r.token();
            if !t.starts_with('d') { return Err(format!("expected a float, got {}", t)); }
            t[1..].parse::<$t>().map_err(|e| e.to_string())
        } }
    )* } }
    floats!(f32, "g s3:f32 ", f64, "");
    impl Put for bool { fn put(&self, o: &mut String) { o.push(if *self { 't' } else { 'f' }); } }
    impl Get for bool { fn get(r: &mut Reader) -> Result<Self, String> {
        match r.token().as_str() { "t" => Ok(true), "f" => Ok(false), t => Err(format!("expected a bool, got {}", t)) }
    } }
    impl Put for str { fn put(&self, o: &mut String) { o.push_str(&format!("s{}:", self.len())); o.push_str(self); } }
    impl Put for String { fn put(&self, o: &mut String) { self.as_str().put(o) } }
    impl Get for String { fn get(r: &mut Reader) -> Result<Self, String> { r.string() } }
    impl Put for char { fn put(&self, o: &mut String) { self.to_string().put(o) } }
    impl Get for char { fn get(r: &mut Reader) -> Result<Self, String> {
        let s = r.string()?;
        let mut it = s.chars();
        match (it.next(), it.next()) { (Some(c), None) => Ok(c), _ => Err("expected one character".into()) }
    } }
    impl Put for () { fn put(&self, o: &mut String) { o.push('n'); } fn empty_able() -> bool { true } }
    impl Get for () { fn get(r: &mut Reader) -> Result<Self, String> {
        if r.token() == "n" { Ok(()) } else { Err("expected unit".into()) }
    } fn empty_able() -> bool { true } }
    // A returned `&str` or `&[T]` (a `&'static str` of literals, or one borrowed from an argument)
    // refers to a decoded copy that lives as long as the program: the proxy has nothing else to lend.
    impl<'a> Get for &'a str { fn get(r: &mut Reader) -> Result<Self, String> { Ok(Box::leak(r.string()?.into_boxed_str())) } }
    impl<'a, T: Get + 'static> Get for &'a [T] { fn get(r: &mut Reader) -> Result<Self, String> {
        Ok(Box::leak(Vec::<T>::get(r)?.into_boxed_slice()))
    } }
    impl<T: Put + ?Sized> Put for &T { fn put(&self, o: &mut String) { (**self).put(o) } }
    impl<T: Put + ?Sized> Put for &mut T { fn put(&self, o: &mut String) { (**self).put(o) } }
    impl<T: Put + ?Sized> Put for Box<T> { fn put(&self, o: &mut String) { (**self).put(o) } }
    fn items<'a, T: Put + 'a, I: Iterator<Item = &'a T>>(o: &mut String, tag: char, n: usize, it: I) {
        o.push(tag);
        o.push_str(&n.to_string());
        for x in it { o.push(' '); x.put(o); }
    }
    impl<T: Put> Put for [T] { fn put(&self, o: &mut String) { items(o, 'l', self.len(), self.iter()) } }
    impl<T: Put> Put for Vec<T> { fn put(&self, o: &mut String) { items(o, 'l', self.len(), self.iter()) } }
    impl<T: Get> Get for Vec<T> { fn get(r: &mut Reader) -> Result<Self, String> {
        let n = r.count('l')?;
        let mut v = Vec::new();
        for _ in 0..n { r.skip(); v.push(T::get(r)?); }
        Ok(v)
    } }
    impl<T: Put> Put for HashSet<T> { fn put(&self, o: &mut String) { items(o, 'e', self.len(), self.iter()) } }
    impl<T: Get + Eq + Hash> Get for HashSet<T> { fn get(r: &mut Reader) -> Result<Self, String> {
        let n = r.count('e')?;
        let mut v = HashSet::new();
        for _ in 0..n { r.skip(); v.insert(T::get(r)?); }
        Ok(v)
    } }
    impl<T: Put> Put for BTreeSet<T> { fn put(&self, o: &mut String) { items(o, 'e', self.len(), self.iter()) } }
    impl<T: Get + Ord> Get for BTreeSet<T> { fn get(r: &mut Reader) -> Result<Self, String> {
        let n = r.count('e')?;
        let mut v = BTreeSet::new();
        for _ in 0..n { r.skip(); v.insert(T::get(r)?); }
        Ok(v)
    } }
    impl<K: Put, V: Put> Put for HashMap<K, V> { fn put(&self, o: &mut String) {
        o.push_str(&format!("m{}", self.len()));
        for (k, v) in self { o.push(' '); k.put(o); o.push(' '); v.put(o); }
    } }
    impl<K: Get + Eq + Hash, V: Get> Get for HashMap<K, V> { fn get(r: &mut Reader) -> Result<Self, String> {
        let n = r.count('m')?;
        let mut m = HashMap::new();
        for _ in 0..n { r.skip(); let k = K::get(r)?; r.skip(); m.insert(k, V::get(r)?); }
        Ok(m)
    } }
    impl<K: Put, V: Put> Put for BTreeMap<K, V> { fn put(&self, o: &mut String) {
        o.push_str(&format!("m{}", self.len()));
        for (k, v) in self { o.push(' '); k.put(o); o.push(' '); v.put(o); }
    } }
    impl<K: Get + Ord, V: Get> Get for BTreeMap<K, V> { fn get(r: &mut Reader) -> Result<Self, String> {
        let n = r.count('m')?;
        let mut m = BTreeMap::new();
        for _ in 0..n { r.skip(); let k = K::get(r)?; r.skip(); m.insert(k, V::get(r)?); }
        Ok(m)
    } }
    impl<T: Put> Put for Option<T> {
        fn put(&self, o: &mut String) {
            match self { Some(x) => { if T::empty_able() { o.push_str("g s4:Some "); } x.put(o) } None => o.push('n') }
        }
        fn empty_able() -> bool { true }
    }
    impl<T: Get> Get for Option<T> {
        fn get(r: &mut Reader) -> Result<Self, String> {
            if r.s.get(r.p) == Some(&b'n') && matches!(r.s.get(r.p + 1), None | Some(&b' ')) { r.p += 1; return Ok(None); }
            // `g s4:Some` around a value that can be `n`; an untagged one (an engine's input) is unambiguous.
            if T::empty_able() && r.s[r.p..].starts_with(b"g s4:Some ") { r.p += 10; }
            Ok(Some(T::get(r)?))
        }
        fn empty_able() -> bool { true }
    }
    impl<A: Put, B: Put> Put for (A, B) { fn put(&self, o: &mut String) {
        o.push_str("u2 "); self.0.put(o); o.push(' '); self.1.put(o);
    } }
    impl<A: Get, B: Get> Get for (A, B) { fn get(r: &mut Reader) -> Result<Self, String> {
        if r.count('u')? != 2 { return Err("expected a pair".into()); }
        r.skip(); let a = A::get(r)?; r.skip(); Ok((a, B::get(r)?))
    } }
    impl<A: Put, B: Put, C: Put> Put for (A, B, C) { fn put(&self, o: &mut String) {
        o.push_str("u3 "); self.0.put(o); o.push(' '); self.1.put(o); o.push(' '); self.2.put(o);
    } }
    impl<A: Get, B: Get, C: Get> Get for (A, B, C) { fn get(r: &mut Reader) -> Result<Self, String> {
        if r.count('u')? != 3 { return Err("expected a triple".into()); }
        r.skip(); let a = A::get(r)?; r.skip(); let b = B::get(r)?; r.skip(); Ok((a, b, C::get(r)?))
    } }

    pub fn send(f: &mut std::fs::File, payload: &str) {
        let data = format!("{}\n{}", payload.len(), payload);
        if f.write_all(data.as_bytes()).is_err() { std::process::exit(1); }
    }
    pub fn recv(f: &mut std::fs::File) -> Option<Vec<u8>> {
        let mut header = Vec::new();
        let mut one = [0u8; 1];
        while header.last() != Some(&b'\n') {
            if f.read(&mut one).ok()? == 0 { return None; }
            header.push(one[0]);
        }
        let n: usize = String::from_utf8_lossy(&header[..header.len() - 1]).parse().ok()?;
        let mut data = vec![0u8; n];
        f.read_exact(&mut data).ok()?;
        Some(data)
    }
    pub fn text(s: &str) -> String { format!("s{}:{}", s.len(), s) }
}
'''

SERVER = r'''
fn main() {
    use std::os::unix::io::FromRawFd;
    let mut calls = unsafe { std::fs::File::from_raw_fd(3) };
    let mut replies = unsafe { std::fs::File::from_raw_fd(4) };
    std::panic::set_hook(Box::new(|_| {}));
    while let Some(call) = bs::recv(&mut calls) {
        let reply = babelscore_serve(&call);
        bs::send(&mut replies, &reply);
    }
    std::process::exit(0);
}

fn babelscore_serve(call: &[u8]) -> String {
    use bs::{Get, Put};
    let mut r = bs::Reader { s: call, p: 0 };
    match r.count('l') {
        Ok(ARITY) => {}
        _ => return format!("z {}", bs::text("wrong number of arguments")),
    }
    let decoded = (|| -> Result<_, String> { DECODE })();
    let DESTRUCTURE = match decoded { Ok(v) => v, Err(e) => return format!("z {}", bs::text(&e)) };
    let before: Vec<String> = vec![BEFORE];
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ENTRY(ARGS))) {
        Ok(value) => {
            // What a `&mut` argument was left as is part of the answer, as the caller sees it (engine.sandbox.arguments).
            // No earlier call's argument can change: a `&mut` borrow ends with the call (a `static`
            // cannot hold it), and an owned argument is the callee's own.
            let after: Vec<String> = vec![AFTER];
            let changed = after != before;
            let mut o = String::from(if changed { "a l2 " } else { "o " });
            value.put(&mut o);
            if changed {
                o.push_str(&format!(" l{}", after.len()));
                for a in &after { o.push(' '); o.push_str(a); }
            }
            o
        }
        // A message (`&str` or `String`: the same panic, literal or formatted) is `panic`, with the
        // payload's type and text for the tests' `downcast_ref`; any other payload
        // (`std::panic::panic_any(value)`) is another error: `panic_any`.
        Err(p) => format!("x {}", bs::text(&match (p.downcast_ref::<&str>(), p.downcast_ref::<String>()) {
            (Some(m), _) => format!("panic\n&str\n{}", m),
            (_, Some(m)) => format!("panic\nString\n{}", m),
            _ => "panic_any".to_string(),
        })),
    }
}
'''

PROXY_CALL = r'''
thread_local! {
    // The arguments' state after the last call, when it changed them (`a` reply): the reply and where that state starts.
    static BS_AFTER: std::cell::RefCell<Option<(Vec<u8>, usize)>> = std::cell::RefCell::new(None);
}

fn babelscore_after() -> Option<(Vec<u8>, usize)> { BS_AFTER.with(|a| a.borrow_mut().take()) }

#[allow(dead_code)]
fn babelscore_restored<T: bs::Get>(r: &mut bs::Reader) -> T {
    r.skip();
    match T::get(r) {
        Ok(v) => v,
        Err(e) => { eprintln!("candidate broken: the arguments' state does not decode: {}", e); std::process::exit(1) }
    }
}

#[allow(dead_code)]
fn babelscore_restore_slice<T>(dst: &mut [T], got: Vec<T>) {
    if got.len() != dst.len() {
        eprintln!("candidate broken: a slice's state of another length");
        std::process::exit(1)
    }
    for (d, g) in dst.iter_mut().zip(got) { *d = g; }
}

static BS_CALL_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn babelscore_call<R: bs::Get>(args: &[&dyn bs::Put]) -> R {
    use std::os::unix::io::FromRawFd;
    let mut calls = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(5) });
    let mut replies = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(6) });
    let mut payload = format!("l{}", args.len());
    for a in args { payload.push(' '); a.put(&mut payload); }
    // One call at a time on the channel: the tests' threads may call concurrently.
    let received = {
        let _hold = BS_CALL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        bs::send(&mut calls, &payload);
        bs::recv(&mut replies)
    };
    let reply = match received {
        Some(r) => r,
        None => { eprintln!("candidate broken: the engine closed the call channel"); std::process::exit(1) }
    };
    let mut r = bs::Reader { s: &reply, p: 2 };
    let after = reply[0] == b'a';
    if after && r.count('l').is_ok() { r.skip(); }
    match reply[0] {
        b'o' | b'a' => match R::get(&mut r) {
            Ok(v) => {
                if after { BS_AFTER.with(|a| *a.borrow_mut() = Some((reply.clone(), r.p))); }
                v
            }
            Err(e) => { eprintln!("candidate broken: {}", e); std::process::exit(1) }
        },
        // The candidate's panic message, with its payload's type (`panic!("negative")` is a `&str`).
        b'x' => match r.string().unwrap_or_default().splitn(3, '\n').collect::<Vec<_>>()[..] {
            [_, "&str", m] => std::panic::panic_any(&*Box::leak(m.to_string().into_boxed_str())),
            [_, "String", m] => std::panic::panic_any(m.to_string()),
            _ => panic!("the candidate panicked"),
        },
        _ => { eprintln!("candidate broken: {}", r.string().unwrap_or_default()); std::process::exit(1) }
    }
}

'''


def _owned(kind: str) -> tuple[str, str]:
    """(owned type to decode into, how to pass it: '', '&' or '&mut ')."""
    kind = kind.strip()
    passing = ""
    if kind.startswith("&"):
        kind = kind[1:].strip()
        passing = "&"
        if kind.startswith("mut "):
            kind, passing = kind[4:].strip(), "&mut "
        kind = re.sub(r"^'\w+\s+", "", kind)
    if kind == "str":
        kind = "String"
    elif kind.startswith("[") and kind.endswith("]"):
        kind = f"Vec<{kind[1:-1]}>"
    return kind, passing


def jobs(task: dict, code: str, script) -> tuple[SandboxProgram, SandboxProgram]:
    from engine.sandbox.programs import RUST_SPLIT_HARNESS, join_sources, rename_main

    header = syntax.function_header("rust", task["signature"])
    context = task.get("context") or ""
    names = [re.sub(r"^mut\s+", "", name) for name, _ in header.params]
    owned = [_owned(kind) for _, kind in header.params]
    decode = "Ok((" + "".join(f"{{ r.skip(); <{kind}>::get(&mut r)? }}, " for kind, _ in owned) + "))"
    server = (SERVER.replace("ARITY", str(len(owned))).replace("DECODE", decode)
              .replace("DESTRUCTURE", "(" + "".join(f"mut a{i}, " for i in range(len(owned))) + ")")
              .replace("ENTRY", header.name).replace("ARGS", ", ".join(f"{p}a{i}" for i, (_, p) in enumerate(owned)))
              .replace("BEFORE", "".join(f"{{ let mut o = String::new(); a{i}.put(&mut o); o }}, " for i in range(len(owned))))
              .replace("AFTER", "".join(f"{{ let mut o = String::new(); a{i}.put(&mut o); o }}, " if p == "&mut " else f"before[{i}].clone(), "
                                        for i, (_, p) in enumerate(owned))))
    # A `&mut` parameter gets the state the candidate's call left it in, as in one process.
    slices = ["[" in kind for _, kind in header.params]  # `&mut [T]`: its elements change, never its length
    restore = "".join(f"        *{n} = babelscore_restored::<{kind}>(&mut r);\n" if p == "&mut " and not slice
                      else f"        babelscore_restore_slice({n}, babelscore_restored::<{kind}>(&mut r));\n" if p == "&mut "
                      else f"        let _ = babelscore_restored::<{kind}>(&mut r);\n"
                      for n, (kind, p), slice in zip(names, owned, slices))
    proxy = (f"{task['signature']} {{\n    let value = babelscore_call(&[{', '.join(f'&{n}' for n in names)}]);\n"
             f"    if let Some((data, p)) = babelscore_after() {{\n        let mut r = bs::Reader {{ s: &data, p }};\n"
             f"        r.skip();\n        let _ = r.count('l');\n{restore}    }}\n    value\n}}\n")
    renamed = rename_main(task["tests"], r"\bfn\s+main\s*\(\s*\)", "fn babelscore_tests_main()", "rust")
    compile_step = f"rustc {RUSTC_FLAGS} -o program main.rs"
    return (SandboxProgram({"main.rs": join_sources(CODEC, context, code, server)}, script(compile_step, "./program")),
            SandboxProgram({"main.rs": join_sources(CODEC, context, proxy, renamed, PROXY_CALL, RUST_SPLIT_HARNESS)}, script(compile_step, "./program")))
