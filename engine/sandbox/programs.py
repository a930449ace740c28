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


# The split run's Java tests harness: the tests' own System.exit (java_exits_rewritten makes it
# BabelscoreHarness.exitTests) with status 0 after their checks is a pass, as in one process.
# Never in the one-sandbox run, where the candidate's own class could call exitTests(0).
JAVA_SPLIT_HARNESS = """public class BabelscoreHarness {
    private static byte[] token = new byte[0];
    private static java.io.FileOutputStream out;

    public static void main(String[] args) throws Exception {
        byte[] buffer = new byte[64];
        int n;
        try (java.io.FileInputStream in = new java.io.FileInputStream("/proc/self/fd/3")) { n = in.read(buffer); }
        token = java.util.Arrays.copyOf(buffer, Math.max(n, 0));
        out = new java.io.FileOutputStream("/proc/self/fd/4");
        ENTRY.main(args);
        passed();
    }

    public static void exitTests(int status) {
        if (status == 0 && token.length > 0) passed();
        System.exit(status);
    }

    private static void passed() {
        try {
            System.out.flush();
            out.write(token);
            out.write(" passed\\n".getBytes("US-ASCII"));
            out.close();
        } catch (java.io.IOException e) {
            Runtime.getRuntime().halt(1);
        }
        Runtime.getRuntime().halt(0);
    }
}
"""


def java_exits_rewritten(tests: str) -> str:
    """The tests' `System.exit(` calls through the split harness's exitTests (a shutdown hook
    cannot tell exit(0) from exit(1))."""
    return re.sub(r"(?<![\w.])System\.exit\(", "BabelscoreHarness.exitTests(", tests)


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

# The split run's tests side (engine.sandbox.proxies): the candidate is in another process there,
# so the tests' own exit(0) (`std::exit(0)`, `std::process::exit(0)`) after their checks is a
# pass, as in one process; glibc's on_exit hands the handler the exit status (the proxy leaves
# with `_Exit(1)`/`exit(1)`, an assert with abort(), a panic with 101: never 0). The one-sandbox
# run keeps CPP_HARNESS and RUST_HARNESS, where the candidate could call exit(0) itself.
CPP_SPLIT_HARNESS = """#include <stdlib.h>
#include <string>
#include <unistd.h>
int babelscore_tests_main();
static char babelscore_token[64];
static ssize_t babelscore_token_size = 0;
static void babelscore_verdict() {
    std::string line(babelscore_token, babelscore_token_size);
    line += " passed\\n";
    if (write(4, line.data(), line.size()) < 0) _exit(1);
}
static void babelscore_exited(int status, void*) {
    if (status == 0 && babelscore_token_size > 0) babelscore_verdict();
}
int main() {
    babelscore_token_size = read(3, babelscore_token, sizeof babelscore_token);
    close(3);
    on_exit(babelscore_exited, nullptr);
    int rc = babelscore_tests_main();
    if (rc != 0 || babelscore_token_size <= 0) return rc ? rc : 1;  // exit(rc): the handler sees rc, writes nothing
    babelscore_verdict();
    _exit(0);
}
"""

RUST_SPLIT_HARNESS = """
static BABELSCORE_TOKEN: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
extern "C" {
    fn on_exit(handler: extern "C" fn(i32, *mut std::ffi::c_void), arg: *mut std::ffi::c_void) -> i32;
    fn _exit(status: i32) -> !;
}
fn babelscore_verdict() {
    use std::io::Write;
    use std::os::unix::io::FromRawFd;
    let mut line = match BABELSCORE_TOKEN.lock() { Ok(t) if !t.is_empty() => t.clone(), _ => return };
    line.extend_from_slice(b" passed\\n");
    let mut out = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(4) });
    if out.write_all(&line).is_err() { unsafe { _exit(1) } }
}
extern "C" fn babelscore_exited(status: i32, _: *mut std::ffi::c_void) {
    if status == 0 { babelscore_verdict(); }
}
fn main() {
    use std::io::Read;
    use std::os::unix::io::FromRawFd;
    let mut token = Vec::new();
    unsafe { std::fs::File::from_raw_fd(3) }.read_to_end(&mut token).expect("token");
    if let Ok(mut kept) = BABELSCORE_TOKEN.lock() { *kept = token; }
    unsafe { on_exit(babelscore_exited, std::ptr::null_mut()); }
    babelscore_tests_main();
    babelscore_verdict();
    unsafe { _exit(0) }
}
"""

# The end of Go's split-run tests harness (engine.sandbox.proxies.go): the verdict after the
# tests' main, or from the tests' own os.Exit(0) (go_exits_rewritten); never after a refused reply.
GO_TESTS_MAIN = """var bsBrokenWhy string

func bsBroken(why string) {
	bsBrokenWhy = why
	os.Stderr.WriteString("candidate broken: " + why + "\\n")
	os.Exit(1)
}

var bsToken []byte

// The tests' own os.Exit (rewritten to this call by go_exits_rewritten): exit status 0 after their checks is
// a pass, as in one process; the candidate is in another process and never reaches it.
func babelscoreExit(code int) {
	if code == 0 && bsBrokenWhy == "" && len(bsToken) > 0 {
		os.NewFile(4, "verdict").Write(append(bsToken, []byte(" passed\\n")...))
	}
	os.Exit(code)
}

func main() {
	tokenFile := os.NewFile(3, "token")
	token := make([]byte, 64)
	n, _ := tokenFile.Read(token)
	tokenFile.Close()
	bsToken = token[:n]
	babelscoreTestsMain()
	if bsBrokenWhy != "" {
		os.Exit(1)
	}
	os.NewFile(4, "verdict").Write(append(token[:n], []byte(" passed\\n")...))
	os.Exit(0)
}
"""


def go_exits_rewritten(tests: str) -> str:
    """The tests' `os.Exit(` calls through the harness's babelscoreExit (os.Exit runs no hook the
    harness could use); `var _ = os.Exit` keeps an `os` import that only Exit used."""
    rewritten, count = re.subn(r"(?<![\w.])os\.Exit\(", "babelscoreExit(", tests)
    return rewritten + "\nvar _ = os.Exit\n" if count else tests


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
