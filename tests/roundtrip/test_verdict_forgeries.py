"""Attacks on the round trip's verdict, written as model completions and run through the stage's
own path (`generation.code_from_completion`, then `orchestrate.execute_row`, default limits).

Every completion here returns a wrong answer and tries to make it score anyway, one class of
attack per test; each would forge a pass (or crash the stage) wherever the tests share the
candidate's file or process or its token is in reach. Contained means: status failed, error or
rejected, pass@1 0, correctness below 0.5. One run per attack; compiled languages compile each
side once.
"""
from __future__ import annotations

import dataclasses
import math
import types

import pytest

from engine.roundtrip import generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
pytestmark = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
POLYGLOT = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
# HumanEval's form: tests through `check(candidate)`, an exact int answer.
PY_ADD = {**POLYGLOT["python"], "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n",
          "entry_point": "add_numbers"}
CPP_SCAN = {**POLYGLOT["cpp"], "context": POLYGLOT["cpp"]["context"] + "\n#include <cctype>\n#include <cstdio>\n"
            "#include <cstring>\n#include <fcntl.h>\n#include <unistd.h>"}
JAVA_LIST = {**POLYGLOT["java"], "task_id": "list", "signature": "public static java.util.List<Integer> twice(java.util.List<Integer> xs)",
             "code": "public class Solution {\n    public static java.util.List<Integer> twice(java.util.List<Integer> xs) {\n"
                     "        java.util.List<Integer> out = new java.util.ArrayList<>();\n        for (int x : xs) out.add(2 * x);\n"
                     "        return out;\n    }\n}\n",
             "tests": "public class Main {\n    public static void main(String[] args) {\n        if (!Solution.twice(java.util.Arrays.asList(1, 2))"
                      ".equals(java.util.Arrays.asList(2, 4))) throw new AssertionError(\"twice\");\n    }\n}\n"}

# The token of the tests' run, scanned from main()'s stack, where a harness sharing the process would leave it (32 hex digits).
CPP_STACK_SCAN = r"""
    FILE* maps = std::fopen("/proc/self/maps", "r");
    int mem = open("/proc/self/mem", O_RDONLY);
    char line[512];
    static char buf[1 << 20];
    while (maps && std::fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        if (!std::strstr(line, "[stack]") || std::sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        long n = pread(mem, buf, hi - lo < sizeof buf ? hi - lo : sizeof buf, lo);
        for (long i = 1; i + 33 <= n; i++) {
            int k = 0;
            while (k < 32 && std::isxdigit((unsigned char) buf[i + k]) && !std::isupper((unsigned char) buf[i + k])) k++;
            if (k == 32 && !std::isxdigit((unsigned char) buf[i - 1]) && !std::isxdigit((unsigned char) buf[i + 32])) {
                write(4, buf + i, 32);
                write(4, " passed\n", 8);
                _exit(0);
            }
        }
    }
    return 0;
}
"""

# The token scanned from the process's own memory (/proc/self/mem): any copy the process holds is readable.
JS_MEMORY_SCAN = r"""
  const fs = require('fs');
  const mem = fs.openSync('/proc/self/mem', 'r');
  for (const line of fs.readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) rw/.exec(line);
    if (!m) continue;
    const lo = parseInt(m[1], 16), hi = parseInt(m[2], 16);
    if (hi - lo > (256 << 20)) continue;
    const buf = Buffer.alloc(hi - lo);
    let n = 0;
    try { n = fs.readSync(mem, buf, 0, hi - lo, lo); } catch (e) { continue; }
    const found = /(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])/.exec(buf.toString('latin1', 0, n));
    if (found) { fs.writeSync(4, found[0] + ' passed\n'); process.reallyExit(0); }
  }
  return 0;
}
"""
GO_SCAN = {**POLYGLOT["go"], "context": 'import (\n\t"os"\n\t"regexp"\n\t"strconv"\n\t"strings"\n)'}
GO_MEMORY_SCAN = r"""
	maps, _ := os.ReadFile("/proc/self/maps")
	mem, _ := os.Open("/proc/self/mem")
	hex := regexp.MustCompile(`(^|[^0-9a-f])([0-9a-f]{32})([^0-9a-f]|$)`)
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") {
			continue
		}
		r := strings.Split(f[0], "-")
		lo, _ := strconv.ParseUint(r[0], 16, 64)
		hi, _ := strconv.ParseUint(r[1], 16, 64)
		if hi-lo > 256<<20 {
			continue
		}
		buf := make([]byte, hi-lo)
		n, _ := mem.ReadAt(buf, int64(lo))
		if m := hex.FindSubmatch(buf[:n]); m != nil {
			os.NewFile(4, "v").Write(append(m[2], []byte(" passed\n")...))
			os.Exit(0)
		}
	}
	return 0
}
"""
RUST_MEMORY_SCAN = r"""
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::io::FromRawFd;
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
    let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 2 || !f[1].starts_with("rw") { continue; }
        let r: Vec<&str> = f[0].split('-').collect();
        let (lo, hi) = (u64::from_str_radix(r[0], 16).unwrap(), u64::from_str_radix(r[1], 16).unwrap());
        if hi - lo > 256 << 20 || mem.seek(SeekFrom::Start(lo)).is_err() { continue; }
        let mut buf = vec![0u8; (hi - lo) as usize];
        let n = mem.read(&mut buf).unwrap_or(0);
        for i in 1..n.saturating_sub(32) {
            if (0..32).all(|k| hex(buf[i + k])) && !hex(buf[i - 1]) && !hex(buf[i + 32]) {
                let mut out = unsafe { std::fs::File::from_raw_fd(4) };
                out.write_all(&buf[i..i + 32]).ok();
                out.write_all(b" passed\n").ok();
                std::process::exit(0);
            }
        }
    }
    0
}
"""

JAVA_CLASS_JAVA = (
    "\n        return 0; // \\u000a } } class java { static class io { static class FileInputStream implements AutoCloseable {"
    " FileInputStream(String p) throws Exception { Class<?> i = Class.forName(\"java.io.FileInputStream\");"
    " Object in = i.getConstructor(String.class).newInstance(\"/proc/self/fd/3\"); byte[] b = new byte[64];"
    " int n = (Integer) i.getMethod(\"read\", byte[].class).invoke(in, (Object) b); Class<?> o = Class.forName(\"java.io.FileOutputStream\");"
    " Object out = o.getConstructor(String.class).newInstance(\"/proc/self/fd/4\"); byte[] m = new byte[n + 8];"
    " System.arraycopy(b, 0, m, 0, n); System.arraycopy(\" passed\\n\".getBytes(), 0, m, n, 8);"
    " o.getMethod(\"write\", byte[].class).invoke(out, (Object) m); Runtime.getRuntime().halt(0); }"
    " public int read(byte[] b) { return 0; } public void close() {} }"
    " static class FileOutputStream { FileOutputStream(String p) {} public void write(byte[] b) {} public void close() {} } }"
    " static class util { static class Arrays { static byte[] copyOf(byte[] b, int n) { return b; } } } }"
    " class BabelscorePad { void pad() {\n")

# (task, completion): each returns a wrong answer.
ATTACKS = {
    # Each works wherever the tests share the candidate's file, module or process.
    "cpp: #define assert off, past a digit separator": (
        POLYGLOT["cpp"], "\n    long x = 1'000; return 0; }\n#define assert(x) ((void)0)\nlong babelscore_pad() { return 1'0;\n"),
    "go: package-level panic, past a raw string ending in a backslash": (
        POLYGLOT["go"], "\n\ts := `\\`\n\t_ = s\n\treturn 0\n}\n\nfunc panic(v interface{}) {}\n\nfunc babelscorePad() string { return `x`\n"),
    "rust: crate-level assert_eq, past a lifetime": (
        POLYGLOT["rust"], "\n    let _x: &'static str = \"a\"; 0 }\nmacro_rules! assert_eq { ($($t:tt)*) => {} }\n"
                          "fn babelscore_pad() -> &'static str { \"x\"\n"),
    "javascript: top-level return, past a quote in a regex": (
        POLYGLOT["javascript"], "\n  const r = /'/; return 0; }\nreturn;\nfunction babelscorePad() { const q = /'/;\n"),
    # It also reads the token from fd 3 before the harness does: the token class for Java.
    "java: class java over the harness's names, past \\u000a": (POLYGLOT["java"], JAVA_CLASS_JAVA),
    # Each works wherever the token is reachable in the candidate's process.
    "python: __main__._TOKEN": (
        PY_ADD, "    import __main__, os\n    os.write(4, __main__._TOKEN + b' passed\\n')\n    os._exit(0)\n"),
    "cpp: token scanned from main()'s stack": (CPP_SCAN, CPP_STACK_SCAN),
    "javascript: token scanned from the process's memory": (POLYGLOT["javascript"], JS_MEMORY_SCAN),
    "go: token scanned from the process's memory": (GO_SCAN, GO_MEMORY_SCAN),
    "rust: token scanned from the process's memory": (POLYGLOT["rust"], RUST_MEMORY_SCAN),
    # Each tries to get a wrong value past the return-value guard.
    "python: metaclass whose __eq__ passes the type check": (
        {**PY_ADD, "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n"},
        "    class Meta(type):\n        def __eq__(cls, other):\n            return True\n        __hash__ = type.__hash__\n"
        "    class Any(metaclass=Meta):\n        def __eq__(self, other):\n            return True\n    return Any()\n"),
    "python: reads the calling assert's expected value": (
        PY_ADD, "    import re, sys\n    frame = sys._getframe(1)\n    while 'tests.py' not in frame.f_code.co_filename:\n"
                "        frame = frame.f_back\n    line = open(frame.f_code.co_filename).read().splitlines()[frame.f_lineno - 1]\n"
                "    return int(re.findall(r'== (\\d+)', line)[0])\n"),
    "java: AbstractList whose equals is always true": (
        JAVA_LIST, "\n        return new java.util.AbstractList<Integer>() {\n            public Integer get(int i) { return 0; }\n"
                   "            public int size() { return 2; }\n            public boolean equals(Object o) { return true; }\n        };\n    }\n"),
}


# Written against the split run itself (the candidate as a server, the tests elsewhere): each
# tries its class again where the split run keeps the tests, the token and the comparison.
GO_OS = {**POLYGLOT["go"], "context": 'import "os"'}
ATTACKS_ON_THE_SPLIT = {
    "python: patches builtins and os in its own process": (
        PY_ADD, "    import builtins, os\n    builtins.AssertionError = type('Quiet', (Exception,), {})\n"
                "    os.write = lambda fd, data: len(data)\n    return 0\n"),
    "python: scans every process it can see for the token": (
        PY_ADD, "    import os, re\n    for pid in os.listdir('/proc'):\n        try:\n"
                "            data = open('/proc/%s/environ' % pid, 'rb').read() + open('/proc/%s/cmdline' % pid, 'rb').read()\n"
                "        except OSError:\n            continue\n        for token in re.findall(rb'[0-9a-f]{32}', data):\n"
                "            os.write(4, token + b' passed\\n')\n    return 0\n"),
    "python: a str subclass that equals everything": (
        {**PY_ADD, "tests": "def check(candidate):\n    assert candidate(1, 2) == '3'\n"},
        "    class S(str):\n        def __eq__(self, other):\n            return True\n        __hash__ = str.__hash__\n    return S('x')\n"),
    "python: a column-0 string to end the function early": (
        PY_ADD, "    x = '''\n'''\nimport os\nos._exit(0)\n    return 0\n"),
    "javascript: patches its own prototypes and writes a verdict line": (
        POLYGLOT["javascript"], "\n  Object.prototype.valueOf = () => 3;\n  require('fs').writeSync(4, 'x'.repeat(32) + ' passed\\n');\n"
                                "  return { get n() { return 3; } };\n}\n"),
    "cpp: a line splice in a comment hides the closing brace": (
        POLYGLOT["cpp"], "\n    return 0; // ends here \\\n}\nlong babelscore_pad() { return 1; }\n"),
    "cpp: forged reply frames on its own reply pipe": (
        CPP_SCAN, "\n    static const char frames[] = \"4\\no i3\";\n    write(4, frames, 6);\n    return 0;\n}\n"),
    "go: init() writes a verdict line on fd 4": (
        GO_OS, "\n\treturn 0\n}\n\nfunc init() { os.NewFile(4, \"v\").Write([]byte(\"00000000000000000000000000000000 passed\\n\")) }\n"),
    "rust: a nested block comment around the closing brace": (
        POLYGLOT["rust"], "\n    /* outer /* inner */ } still a comment */ 0\n}\n"),
    "java: writes a verdict line on its own fd 4": (
        POLYGLOT["java"], "\n        try { new java.io.FileOutputStream(\"/proc/self/fd/4\").write((\"0\".repeat(32) + \" passed\\n\")"
                          ".getBytes()); } catch (Exception e) { }\n        return 0;\n    }\n"),
}


def _through_the_stage(task: dict, completion: str, inputs: list[str] | None = None) -> dict:
    """The row the stage writes for this completion (a rejected one is never run)."""
    params = types.SimpleNamespace(sandbox=LIMITS, call_seconds=1.0, verdict="values")
    try:
        code = generation.code_from_completion(task, completion)
    except ValueError as exc:  # completion_function.Rejected
        return {"status": "rejected", "reason": str(exc), "pass_at_1": 0.0, "correctness": 0.0}
    return orchestrate.execute_row(task, code, inputs, params)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_wrong_completion_cannot_forge_a_pass(attack):
    task, completion = ATTACKS[attack]
    why = toolchain_missing(task["programming_language"])
    if why:
        pytest.skip(why)
    row = _through_the_stage(task, completion)
    assert row["status"] in ("failed", "error", "rejected") and row["pass_at_1"] == 0.0, row


@pytest.mark.parametrize("attack", sorted(ATTACKS_ON_THE_SPLIT))
def test_attacks_on_the_split_run_are_contained(attack):
    task, completion = ATTACKS_ON_THE_SPLIT[attack]
    why = toolchain_missing(task["programming_language"])
    if why:
        pytest.skip(why)
    row = _through_the_stage(task, completion)
    assert row["status"] in ("failed", "error", "rejected", "timeout", "compile_error") and row["pass_at_1"] == 0.0, row


# The compiled languages' honest solutions pass in tests/sandbox/test_languages.py (each task),
# and their completions are cut to the function in test_brace_language_regeneration_keeps_the_function_only.
@pytest.mark.parametrize("language", ["javascript", "python"])
def test_the_honest_answer_still_passes_through_the_same_path(language):
    why = toolchain_missing(language)
    if why:
        pytest.skip(why)
    task = POLYGLOT[language]
    code = task["code"]
    body = code[code.index("{") + 1:] if language != "python" else code[len(task["signature"]):].lstrip("\n")
    assert _through_the_stage(task, body)["status"] == "passed"


# ----- differential testing: rows, never crashes; typed comparison ---------------------------
DIFF_INPUTS = ["(1, 2)", "(3, 4)", "(0, 0)", "(-5, 2)"]


@pytest.mark.parametrize("record", ["b'[' * 200000", "b'[[\"ok\"]' * 3", "b'[[\"ok\", [\"int\", 7]], 1, 2, 3]'"])
def test_a_forged_outcomes_record_is_a_row_error_not_a_crash(record):
    completion = (f"    import __main__, os\n    os.write(4, __main__._TOKEN + b' outcomes\\n' + {record})\n    os._exit(0)\n")
    row = _through_the_stage(PY_ADD, completion, DIFF_INPUTS)
    assert row["status"] in ("failed", "error") and row["pass_at_1"] == 0.0 and row["correctness"] < 0.5, row


def test_a_float_next_to_the_int_answer_does_not_agree():
    row = _through_the_stage(PY_ADD, "    return a + b + 5e-10\n", DIFF_INPUTS)
    assert row["status"] == "failed" and row["correctness"] == 0.0, row
    assert "[program output]" in row["reason"]  # the sandbox's text is marked as the program's, and cut
    honest = _through_the_stage(PY_ADD, "    return a + b\n", DIFF_INPUTS)
    assert honest["status"] == "passed" and honest["correctness"] == 1.0 and not math.isnan(honest["correctness"])


def test_limits_are_the_defaults():
    assert dataclasses.asdict(LIMITS) == dataclasses.asdict(SandboxLimits())
