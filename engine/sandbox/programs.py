"""Program text shared by the two ways a task runs (engine.sandbox.languages, one sandboxed run;
engine.sandbox.proxies, a split run): the compile-then-run shell step, Java's harness class
and class-name rule, the C++ and Rust harness mains, renaming the tests' main, joining parts of
a file, Go's package line. Its own module so that neither of those two imports the other.
"""
from __future__ import annotations

import re

from engine.sandbox.outcome import EXIT_COMPILE
from engine.sandbox.process import PROGRAM_CGROUP_FD

EXIT_NO_CGROUP = 86  # the program could not enter its memory cgroup: never a pass

# rustc for both sides: debug_assert! runs (as under `cargo test`: a test written with it is a
# test), while integer overflow keeps the optimised build's wrapping.
RUSTC_FLAGS = "--edition 2021 -C opt-level=1 -C debug-assertions=on -C overflow-checks=off -A warnings"


# The program moves itself into its memory cgroup once compiled (cgroup.make_program; the fd
# exists only where the engine made one): `0` is the writer itself. A move that fails ends the run.
INTO_PROGRAM_CGROUP = f"[ ! -e /proc/self/fd/{PROGRAM_CGROUP_FD} ] || echo 0 >&{PROGRAM_CGROUP_FD} || exit {EXIT_NO_CGROUP}"


def shell_script(compile_step: str, run_step: str) -> list[str]:
    """Compile (a compiler's refusal is EXIT_COMPILE), then run under the program's memory bound."""
    compiled = f"{compile_step} || exit {EXIT_COMPILE}; " if compile_step else ""
    return ["/bin/sh", "-c", f"{compiled}{INTO_PROGRAM_CGROUP}; exec {run_step} {PROGRAM_CGROUP_FD}>&-"]



JAVA_HARNESS = """public class BabelscoreHarness {
    public static void main(String[] args) throws Exception {
        byte[] buffer = new byte[64];
        int n;
        try (java.io.FileInputStream in = new java.io.FileInputStream("/proc/self/fd/3")) { n = in.read(buffer); }
        byte[] token = java.util.Arrays.copyOf(buffer, Math.max(n, 0));
        java.io.FileOutputStream out = new java.io.FileOutputStream("/proc/self/fd/4");
        ENTRY.main(args);
        System.out.flush();
        out.write(token);
        out.write(" passed\\n".getBytes("US-ASCII"));
        out.close();
        Runtime.getRuntime().halt(0);
    }
}
"""


# The tests' side of C++ and Rust: read the token, run the renamed tests' main, write the verdict.
# One copy serves the one-sandbox run and the split run's tests sandbox.
CPP_HARNESS = """#include <string>
#include <unistd.h>
int babelscore_tests_main();
int main() {
    char token[64];
    ssize_t n = read(3, token, sizeof token);
    close(3);
    int rc = babelscore_tests_main();
    if (rc != 0 || n <= 0) return rc ? rc : 1;
    std::string line(token, n);
    line += " passed\\n";
    if (write(4, line.data(), line.size()) < 0) return 1;
    _exit(0);
}
"""

RUST_HARNESS = """
fn main() {
    use std::io::{Read, Write};
    use std::os::unix::io::FromRawFd;
    let mut token = Vec::new();
    unsafe { std::fs::File::from_raw_fd(3) }.read_to_end(&mut token).expect("token");
    babelscore_tests_main();
    let mut out = unsafe { std::fs::File::from_raw_fd(4) };
    out.write_all(&token).expect("verdict");
    out.write_all(b" passed\\n").expect("verdict");
    std::process::exit(0);
}
"""


def java_class_name(code: str) -> str:
    public = re.search(r"public\s+(?:final\s+|abstract\s+)*class\s+(\w+)", code)
    return public.group(1) if public else "Solution"


def rename_main(tests: str, pattern: str, replacement: str, language: str) -> str:
    renamed, count = re.subn(pattern, replacement, tests, count=1)
    if count != 1:
        raise ValueError(f"{language} tests need a main function to run ({pattern!r} not found)")
    return renamed


def join_sources(*parts: str) -> str:
    return "\n\n".join(p.strip("\n") for p in parts if p and p.strip()) + "\n"


def go_file(source: str) -> str:
    return source if re.match(r"\s*(//[^\n]*\n\s*)*package\s+\w+", source) else "package main\n\n" + source
