"""Go's side of the split run: the candidate's server and the tests' proxy, both package main.

The codec (go_codec) works through `reflect` on the declared types: bool, every int and uint
kind (`i`), float32/64 (`d`), string, slices and arrays (`l`), maps (`m`), pointers to those, and
interfaces holding those with their dynamic type (`g`); a struct, channel or function is not plain
data. A nil slice or map is `n`, an empty one `l0`/`m0`. The proxy has the task's signature,
writes the arguments by their declared types and decodes the reply into its declared result
types (several results travel as a tuple `u<n>`); changed arguments, this call's or an earlier
call's slices, maps and pointers a candidate kept, come back in an `a` reply
(engine.sandbox.arguments). A panic crosses as `x <type>\n<value>`.
"""
from __future__ import annotations

from engine.sandbox import syntax
from engine.sandbox.programs import GO_TESTS_MAIN, go_exits_rewritten
from engine.sandbox.proxies.go_codec import CODEC
from engine.sandbox.relay import SandboxProgram

SERVER = "package main\n" + CODEC + r'''
func main() {
	calls, replies := os.NewFile(3, "calls"), os.NewFile(4, "replies")
	fn := reflect.ValueOf(ENTRY)
	// Every call's arguments, numbered in the order they crossed (bsServe): a local, out of the
	// candidate's reach.
	var held []bsKept
	for {
		call := bsRecv(calls)
		if call == nil {
			os.Exit(0)
		}
		bsSend(replies, bsServe(fn, call, &held))
	}
}

func bsServe(fn reflect.Value, call []byte, held *[]bsKept) (reply []byte) {
	stage := "decode"
	defer func() {
		if p := recover(); p != nil {
			if np, ok := p.(bsNotPlain); ok || stage != "call" {
				why := fmt.Sprint(p)
				if ok {
					why = np.why
				}
				reply = []byte("z " + bsText(why))
			} else {
				reply = []byte("x " + bsText(bsPanicText(p)))
			}
		}
	}()
	r := &bsReader{data: call}
	tok := r.token()
	n, _ := strconv.Atoi(tok[1:])
	t := fn.Type()
	if n != t.NumIn() {
		panic(bsNotPlain{"wrong number of arguments"})
	}
	args := make([]reflect.Value, n)
	for i := range args {
		r.skip()
		args[i] = bsGet(r, t.In(i))
	}
	// A second decoding, untouched by the call: what the arguments were, to tell what it changed.
	r, pristine := &bsReader{data: call}, make([]reflect.Value, n)
	r.token()
	for i := range pristine {
		r.skip()
		pristine[i] = bsGet(r, t.In(i))
	}
	// This call's slices, maps and pointers are kept with the state the caller has of them: a
	// candidate may keep one (a package variable) and change it in a later call, which the caller
	// sees in one process. Every argument is numbered, as the proxy numbers the tests' own.
	first := len(*held)
	for i := range args {
		kept := bsKept{}
		if state := bsState(args[i]); state != "" {
			kept = bsKept{args[i], state}
		}
		*held = append(*held, kept)
	}
	stage = "call"
	out := fn.Call(args)
	stage = "encode"
	var b bytes.Buffer
	// What the caller sees changed: a slice's elements, a map, what a pointer points to (an array
	// or a struct is the callee's own copy). The state after the call is then part of the answer.
	// Compared as encoded text, as the earlier calls' are: a NaN equals itself there (DeepEqual
	// would call every slice or map holding one changed) and maps read in one order.
	changed := false
	for i := range args {
		switch args[i].Kind() {
		case reflect.Slice, reflect.Map, reflect.Ptr:
			changed = changed || bsState(pristine[i]) != bsState(args[i])
		case reflect.Interface:
			changed = changed || !reflect.DeepEqual(pristine[i].Interface(), args[i].Interface())
		default:
			args[i] = pristine[i]
		}
	}
	earlier := bsEarlierChanges(*held, first)
	for i := range args {
		(*held)[first+i].last = bsState(args[i])
	}
	if earlier != "" {
		b.WriteString("a l3 ")
	} else if changed {
		b.WriteString("a l2 ")
	} else {
		b.WriteString("o ")
	}
	switch len(out) {
	case 0:
		b.WriteString("n")
	case 1:
		bsPut(&b, out[0], 0)
	default:
		b.WriteString("u" + strconv.Itoa(len(out)))
		for _, o := range out {
			b.WriteString(" ")
			bsPut(&b, o, 1)
		}
	}
	if changed || earlier != "" {
		b.WriteString(" l" + strconv.Itoa(len(args)))
		for _, a := range args {
			b.WriteString(" ")
			bsPut(&b, a, 1)
		}
		b.WriteString(earlier)
	}
	return b.Bytes()
}

// bsPanicText is a panic as it crosses: its value's type (`%T`, blanks made `_` so the name is
// one word of the exception's chain), a newline, and the value: a string itself, an error's
// Error(), any other value as fmt.Sprint writes it.
func bsPanicText(p interface{}) string {
	name := string(bytes.Join(bytes.Fields([]byte(fmt.Sprintf("%T", p))), []byte("_")))
	switch value := p.(type) {
	case string:
		return name + "\n" + value
	case error:
		return name + "\n" + value.Error()
	}
	return name + "\n" + fmt.Sprint(p)
}

type bsKept struct {
	value reflect.Value
	last  string
}

// bsState is what the caller sees of an argument: a slice's elements, a map, a pointed-to value;
// "" for a value that is the callee's own copy (and for none).
func bsState(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Ptr:
		var b bytes.Buffer
		bsPut(&b, v, 1)
		return b.String()
	}
	return ""
}

// bsEarlierChanges is ` l<2m> i<k> <state>...` for the earlier calls' arguments that changed since
// the caller last saw them, or "".
func bsEarlierChanges(held []bsKept, first int) string {
	var b bytes.Buffer
	m := 0
	for k := 0; k < first; k++ {
		now := bsState(held[k].value)
		if now == held[k].last {
			continue
		}
		held[k].last = now
		m++
		b.WriteString(" i" + strconv.Itoa(k) + " " + now)
	}
	if m == 0 {
		return ""
	}
	return " l" + strconv.Itoa(2*m) + b.String()
}
'''

TESTS_HARNESS = "package main\n" + CODEC + r'''
var bsCalls, bsReplies = os.NewFile(5, "calls"), os.NewFile(6, "replies")

type bsCandidateBroken struct{ why string }

// bsEncode is the call's argument list, each argument written by its declared type (`declared`
// holds pointers to the parameters: a value under `interface{}` crosses with its dynamic type).
// An argument the wire cannot carry never panics inside the tests, where their recover() would
// take it for the candidate's: the engine is told (`u <why>`, the run is an error) and the tests stop.
func bsEncode(declared ...interface{}) []byte {
	var b bytes.Buffer
	defer func() {
		if e := recover(); e != nil {
			why := fmt.Sprint(e)
			if np, ok := e.(bsNotPlain); ok {
				why = np.why
			}
			bsSend(bsCalls, []byte("u "+why))
			bsRecv(bsReplies)
			bsBroken("the tests pass a value the wire cannot carry: " + why)
		}
	}()
	b.WriteString("l" + strconv.Itoa(len(declared)))
	for _, p := range declared {
		b.WriteString(" ")
		bsPut(&b, reflect.ValueOf(p).Elem(), 1)
	}
	return b.Bytes()
}

// bsCall sends the encoded arguments and decodes the reply into the pointers of `results`.
func bsCall(results []interface{}, call []byte, args ...interface{}) {
	// One call at a time on the channel: the tests' goroutines may call concurrently, and the
	// tests' arguments of every call are numbered in the order the server takes the calls.
	bsCallLock.Lock()
	first := len(bsTestsArgs)
	bsTestsArgs = append(bsTestsArgs, args...)
	bsSend(bsCalls, call)
	reply := bsRecv(bsReplies)
	bsCallLock.Unlock()
	if reply == nil {
		bsBroken("the engine closed the call channel")
	}
	r := &bsReader{data: reply, pos: 2}
	after := reply[0] == 'a'
	if after {
		// `a l2 <results> <arguments after the call>`: the results, then the tests' own slices,
		// maps and pointed-to values changed as the call changed them, as in one process; `a l3`
		// adds `l<2m> i<k> <state>...` for earlier calls' arguments the call changed.
		r.token()
		r.skip()
		defer bsRestoreArgs(r, args, first)
		reply[0] = 'o'
	}
	if reply[0] == 'o' {
		// Decoding never panics inside the tests (a recover() there would take it for an answer):
		// a reply that does not decode into the declared types stops the tests.
		defer func() {
			if e := recover(); e != nil {
				bsBroken(fmt.Sprint("the reply does not decode into the declared type: ", e))
			}
		}()
	}
	switch reply[0] {
	case 'o':
		if len(results) == 1 {
			p := reflect.ValueOf(results[0]).Elem()
			p.Set(bsGet(r, p.Type()))
			return
		}
		tok := r.token()
		if len(results) == 0 {
			return
		}
		if n, _ := strconv.Atoi(tok[1:]); n != len(results) {
			bsBroken("wrong number of results")
		}
		for _, res := range results {
			r.skip()
			p := reflect.ValueOf(res).Elem()
			p.Set(bsGet(r, p.Type()))
		}
	case 'x':
		// `<type>\n<value>`: a string, number or bool panic is that value; a runtime error
		// (`runtime.*`) a runtime.Error; any other value an error whose Error() is the value's text.
		text := bsGet(r, reflect.TypeOf("")).String()
		name, message := text, ""
		if i := bytes.IndexByte([]byte(text), '\n'); i >= 0 {
			name, message = text[:i], text[i+1:]
		}
		if name == "string" {
			panic(message)
		}
		if t, ok := bsBasic[name]; ok && name != "any" {
			// A number or a bool (`panic(42)`) is that value again (fmt.Sprint's text reads back exactly).
			v := reflect.New(t)
			if _, err := fmt.Sscan(message, v.Interface()); err == nil {
				panic(v.Elem().Interface())
			}
		}
		if bsHasPrefix(string(bytes.TrimPrefix([]byte(name), []byte("*"))), "runtime.") {
			panic(bsRuntimeError{message})
		}
		panic(bsPanicError{name, message})
	default:
		bsBroken(bsGet(r, reflect.TypeOf("")).String())
	}
}

// bsRuntimeError is a candidate's runtime panic in the tests: a runtime.Error with its message.
type bsRuntimeError struct{ message string }

func (e bsRuntimeError) Error() string { return e.message }
func (e bsRuntimeError) RuntimeError() {}

// bsPanicError is any other panic value of the candidate's in the tests: an error with its text.
type bsPanicError struct{ name, message string }

func (e bsPanicError) Error() string { return e.message }

var bsTestsArgs []interface{}

func bsRestoreArgs(r *bsReader, args []interface{}, first int) {
	defer func() {
		if e := recover(); e != nil {
			bsBroken(fmt.Sprint("the arguments' state does not decode into the declared types: ", e))
		}
	}()
	r.skip()
	r.token()
	for _, a := range args {
		r.skip()
		orig := reflect.ValueOf(a)
		bsRestore(orig, bsGet(r, orig.Type()))
	}
	if r.pos == len(r.data) {
		return
	}
	r.skip()
	tok := r.token()
	m, _ := strconv.Atoi(tok[1:])
	for j := 0; j < m/2; j++ {
		r.skip()
		k, err := strconv.Atoi(r.token()[1:])
		if err != nil || k < 0 || k >= first {
			panic("no such earlier argument")
		}
		r.skip()
		orig := reflect.ValueOf(bsTestsArgs[k])
		bsRestore(orig, bsGet(r, orig.Type()))
	}
	if r.pos != len(r.data) {
		panic("bytes after the reply")
	}
}

func bsRestore(orig, got reflect.Value) {
	switch orig.Kind() {
	case reflect.Slice:
		reflect.Copy(orig, got)
	case reflect.Map:
		if orig.IsNil() {
			return
		}
		for _, k := range orig.MapKeys() {
			orig.SetMapIndex(k, reflect.Value{})
		}
		iter := got.MapRange()
		for iter.Next() {
			orig.SetMapIndex(iter.Key(), iter.Value())
		}
	case reflect.Ptr:
		if !orig.IsNil() && !got.IsNil() {
			orig.Elem().Set(got.Elem())
		}
	}
}

''' + GO_TESTS_MAIN

ENV = {"GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "GO111MODULE": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0",
       "GOFLAGS": "-buildvcs=false"}


def _results(signature: str) -> list[str]:
    """The declared result types, one per result: `(q, r int)` is two ints, as Go reads it."""
    tree = syntax.parse("go", f"package main\n{signature} {{}}\n")
    function = next(n for n in tree.root_node.named_children if n.type == "function_declaration")
    result = function.child_by_field_name("result")
    if result is None:
        return []
    if result.type != "parameter_list":
        return [result.text.decode("utf-8")]
    kinds = []
    for decl in result.named_children:
        kind = decl.child_by_field_name("type").text.decode("utf-8")
        kinds += [kind] * max(1, len(decl.children_by_field_name("name")))
    return kinds


def _tests_context(context: str) -> str:
    """The context the tests see: none when it only imports (Go refuses an unused import)."""
    tree = syntax.parse("go", _go_file_text(context))
    kept = [n for n in tree.root_node.named_children if n.type not in ("package_clause", "import_declaration", "comment")]
    return context if kept else ""


def _go_file_text(source: str) -> str:
    from engine.sandbox.programs import go_file

    return go_file(source)


def jobs(task: dict, code: str, script) -> tuple[SandboxProgram, SandboxProgram]:
    from engine.sandbox.programs import go_file, join_sources, rename_main

    header = syntax.function_header("go", task["signature"])
    results = _results(task["signature"])
    names = [name for name, _ in header.params]
    # The proxy's own result variables, named apart from the signature's named results (`(q, r int)`).
    declared = "".join(f"\tvar bsR{i} {kind}\n" for i, kind in enumerate(results))
    pointers = ", ".join(f"&bsR{i}" for i in range(len(results)))
    returns = ", ".join(f"bsR{i}" for i in range(len(results)))
    encoded = "bsEncode(" + ", ".join(f"&{name}" for name in names) + ")"
    proxy = (f"{task['signature']} {{\n{declared}\tbsCall([]interface{{}}{{{pointers}}}, {encoded}{', ' if names else ''}"
             f"{', '.join(names)})\n\treturn {returns}\n}}\n")
    server_files = {"solution.go": go_file(join_sources(task.get("context") or "", code)),
                    "server.go": SERVER.replace("ENTRY", header.name)}
    renamed = go_exits_rewritten(rename_main(task["tests"], r"\bfunc\s+main\s*\(\s*\)", "func babelscoreTestsMain()", "go"))
    tests_files = {"context.go": go_file(_tests_context(task.get("context") or "")), "proxy.go": "package main\n\n" + proxy,
                   "tests.go": go_file(renamed), "harness.go": TESTS_HARNESS}
    build = "go build -o program "
    server = SandboxProgram(server_files, script(build + "solution.go server.go", "./program"), dict(ENV))
    tests = SandboxProgram(tests_files, script(build + "context.go proxy.go tests.go harness.go", "./program"), dict(ENV))
    return server, tests

