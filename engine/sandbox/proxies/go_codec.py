"""Go's plain-value codec, shared by the candidate's server and the tests' proxy (engine.sandbox.proxies.go).

`bsPut` encodes a `reflect.Value` by its kind (bool, ints and uints `i`, floats `d`, string,
slices and arrays `l`, maps `m`, pointers to those; a value behind an interface as `g <type>
<value>` with its dynamic type, `bsTypeName`); `bsGet` decodes into a declared type (a typed
value into the type it names); `bsSend`/`bsRecv` frame the messages. A struct, channel, function
or named type of a program's is not plain data.
"""
from __future__ import annotations

CODEC = r'''
import (
	"bytes"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"sync"
)

type bsNotPlain struct{ why string }

// One call at a time on the tests' channel (their goroutines may call concurrently).
var bsCallLock sync.Mutex

func bsPut(b *bytes.Buffer, v reflect.Value, depth int) {
	if depth > 32 {
		panic(bsNotPlain{"nested deeper than 32 levels"})
	}
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("n")
	case reflect.Bool:
		if v.Bool() {
			b.WriteString("t")
		} else {
			b.WriteString("f")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString("i" + strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString("i" + strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		// A float32 is `g s3:f32 <float>`: the value verdict compares it at a float32's
		// resolution (engine.sandbox.compare).
		if v.Kind() == reflect.Float32 {
			b.WriteString("g s3:f32 ")
		}
		f := v.Float()
		switch {
		case math.IsNaN(f):
			b.WriteString("dnan")
		case math.IsInf(f, 1):
			b.WriteString("dinf")
		case math.IsInf(f, -1):
			b.WriteString("d-inf")
		default:
			b.WriteString("d" + strconv.FormatFloat(f, 'g', -1, 64))
		}
	case reflect.String:
		s := v.String()
		b.WriteString("s" + strconv.Itoa(len(s)) + ":" + s)
	case reflect.Slice, reflect.Array:
		// A nil slice or map crosses as `n` (it decodes back to nil): reflect.DeepEqual and the
		// tests' `== nil` tell it from an empty one.
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("n")
			return
		}
		b.WriteString("l" + strconv.Itoa(v.Len()))
		for i := 0; i < v.Len(); i++ {
			b.WriteString(" ")
			bsPut(b, v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("n")
			return
		}
		// The entries in a canonical order (by their encoded key, then value), not MapRange's
		// random one: a state is compared as text to tell whether a call changed it, and an
		// unchanged map must read the same at every call.
		entries := make([]bsEntry, 0, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			var k, e bytes.Buffer
			bsPut(&k, iter.Key(), depth+1)
			bsPut(&e, iter.Value(), depth+1)
			entries = append(entries, bsEntry{k.Bytes(), e.Bytes()})
		}
		b.WriteString("m" + strconv.Itoa(len(entries)))
		for _, e := range bsSortEntries(entries) {
			b.WriteString(" ")
			b.Write(e.key)
			b.WriteString(" ")
			b.Write(e.value)
		}
	case reflect.Ptr:
		if v.IsNil() {
			b.WriteString("n")
		} else {
			bsPut(b, v.Elem(), depth+1)
		}
	case reflect.Interface:
		// A value behind an interface crosses with its dynamic type (`g <type> <value>`), which
		// `==`, a type switch and reflect.DeepEqual tell apart: int64(5) is not 5 there, []int
		// is not []interface{}, and a nil *T in an `error` is no nil error.
		if v.IsNil() {
			b.WriteString("n")
			return
		}
		if v.Type() == bsErrorType {
			// An `error` crosses as its message (`g s5:error s<n>:<Error()>`): the tests see a
			// non-nil error with that text. A nil *T whose Error() dereferences it panics here.
			b.WriteString("g s5:error " + bsText(v.Interface().(error).Error()))
			return
		}
		name := bsTypeName(v.Elem().Type())
		if len(name) > 32 {
			panic(bsNotPlain{"a " + name + " has a type name longer than 32 characters"})
		}
		b.WriteString("g " + bsText(name) + " ")
		bsPut(b, v.Elem(), depth+1)
	default:
		panic(bsNotPlain{"a " + v.Type().String() + " is not plain data"})
	}
}

// bsEntry is a map entry as encoded.
type bsEntry struct{ key, value []byte }

// bsSortEntries is a merge sort of map entries by key text, then value text (several NaN keys
// encode alike): the codec imports no "sort" a candidate's own names might clash with.
func bsSortEntries(e []bsEntry) []bsEntry {
	if len(e) < 2 {
		return e
	}
	left, right := bsSortEntries(e[:len(e)/2]), bsSortEntries(e[len(e)/2:])
	out := make([]bsEntry, 0, len(e))
	for len(left) > 0 && len(right) > 0 {
		c := bytes.Compare(right[0].key, left[0].key)
		if c < 0 || c == 0 && bytes.Compare(right[0].value, left[0].value) < 0 {
			out, right = append(out, right[0]), right[1:]
		} else {
			out, left = append(out, left[0]), left[1:]
		}
	}
	return append(append(out, left...), right...)
}

type bsReader struct {
	data []byte
	pos  int
}

func (r *bsReader) token() string {
	end := bytes.IndexByte(r.data[r.pos:], ' ')
	if end < 0 {
		end = len(r.data) - r.pos
	}
	t := string(r.data[r.pos : r.pos+end])
	r.pos += end
	return t
}

func (r *bsReader) skip() {
	if r.pos < len(r.data) && r.data[r.pos] == ' ' {
		r.pos++
	}
}

// bsTypeName is a type's name on the wire: Go's own for the predeclared types and the slices,
// arrays, maps and pointers of them, `any` for interface{}; any other type (a named type of a
// program's, an interface with methods, a struct) is not plain data, as neither side could make
// a value of it.
func bsTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() == 0 && t.PkgPath() == "" {
			return "any"
		}
	case reflect.Slice:
		return "[]" + bsTypeName(t.Elem())
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + bsTypeName(t.Elem())
	case reflect.Map:
		return "map[" + bsTypeName(t.Key()) + "]" + bsTypeName(t.Elem())
	case reflect.Ptr:
		return "*" + bsTypeName(t.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32,
		reflect.Float64, reflect.String:
		if t.PkgPath() == "" {
			return t.Name()
		}
	}
	// Every function here ends in a return: a candidate's package may declare its own `panic`.
	panic(bsNotPlain{"a " + t.String() + " is not plain data"})
	return "?"
}

var bsBasic = map[string]reflect.Type{"bool": reflect.TypeOf(false), "int": reflect.TypeOf(0),
	"int8": reflect.TypeOf(int8(0)), "int16": reflect.TypeOf(int16(0)), "int32": reflect.TypeOf(int32(0)),
	"int64": reflect.TypeOf(int64(0)), "uint": reflect.TypeOf(uint(0)), "uint8": reflect.TypeOf(uint8(0)),
	"uint16": reflect.TypeOf(uint16(0)), "uint32": reflect.TypeOf(uint32(0)), "uint64": reflect.TypeOf(uint64(0)),
	"uintptr": reflect.TypeOf(uintptr(0)), "float32": reflect.TypeOf(float32(0)), "float64": reflect.TypeOf(0.0),
	"string": reflect.TypeOf(""), "any": reflect.TypeOf((*interface{})(nil)).Elem()}

// bsHasPrefix is strings.HasPrefix: the codec imports no package a candidate's names might clash with anew.
func bsHasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// bsParseType is the type a wire name (bsTypeName) stands for.
func bsParseType(name string) reflect.Type {
	if t, ok := bsBasic[name]; ok {
		return t
	}
	switch {
	case bsHasPrefix(name, "[]"):
		return reflect.SliceOf(bsParseType(name[2:]))
	case bsHasPrefix(name, "["):
		end := bytes.IndexByte([]byte(name), ']')
		if end < 0 {
			break
		}
		n, err := strconv.Atoi(name[1:end])
		if err != nil || n < 0 || n > 1<<16 {
			break
		}
		return reflect.ArrayOf(n, bsParseType(name[end+1:]))
	case bsHasPrefix(name, "*"):
		return reflect.PtrTo(bsParseType(name[1:]))
	case bsHasPrefix(name, "map["):
		depth := 0
		for i := 3; i < len(name); i++ {
			depth += map[byte]int{'[': 1, ']': -1}[name[i]]
			if depth == 0 {
				return reflect.MapOf(bsParseType(name[4:i]), bsParseType(name[i+1:]))
			}
		}
	}
	panic(bsNotPlain{"no type of Go's is named " + strconv.Quote(name)})
	return nil
}

var bsErrorType = reflect.TypeOf((*error)(nil)).Elem()

// bsError is an `error` that crossed: its message.
type bsError struct{ message string }

func (e bsError) Error() string { return e.message }

func bsGet(r *bsReader, t reflect.Type) reflect.Value {
	// A float32 travels as `g s3:f32 <float>` (under an interface inside its `g s7:float32`).
	if t.Kind() == reflect.Float32 && bytes.HasPrefix(r.data[r.pos:], []byte("g s3:f32 ")) {
		r.pos += 9
	}
	if r.data[r.pos] == 'g' {
		r.token()
		r.skip()
		name := bsGet(r, reflect.TypeOf("")).String()
		r.skip()
		if name == "error" && t.Kind() == reflect.Interface && reflect.TypeOf(bsError{}).Implements(t) {
			return reflect.ValueOf(bsError{bsGet(r, reflect.TypeOf("")).String()})
		}
		typed := bsParseType(name)
		if t.Kind() != reflect.Interface && typed != t || t.Kind() == reflect.Interface && !typed.Implements(t) {
			panic(bsNotPlain{"a " + name + " where the type is " + t.String()})
		}
		return bsGet(r, typed)
	}
	if t.Kind() == reflect.Ptr && !bytes.HasPrefix(r.data[r.pos:], []byte("n")) {
		p := reflect.New(t.Elem())
		p.Elem().Set(bsGet(r, t.Elem()))
		return p
	}
	v := reflect.New(t).Elem()
	if r.data[r.pos] == 's' {
		colon := r.pos + bytes.IndexByte(r.data[r.pos:], ':')
		n, _ := strconv.Atoi(string(r.data[r.pos+1 : colon]))
		s := string(r.data[colon+1 : colon+1+n])
		r.pos = colon + 1 + n
		if t.Kind() == reflect.Interface {
			return reflect.ValueOf(s)
		}
		v.SetString(s)
		return v
	}
	tok := r.token()
	switch {
	case tok == "n":
		return v
	case tok == "t" || tok == "f":
		if t.Kind() == reflect.Interface {
			return reflect.ValueOf(tok == "t")
		}
		v.SetBool(tok == "t")
	case tok[0] == 'i':
		switch t.Kind() {
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n, err := strconv.ParseUint(tok[1:], 10, 64)
			if err != nil || v.OverflowUint(n) {
				panic(bsNotPlain{"integer out of range: " + tok})
			}
			v.SetUint(n)
		case reflect.Interface:
			n, _ := strconv.ParseInt(tok[1:], 10, 64)
			return reflect.ValueOf(int(n))
		default:
			n, err := strconv.ParseInt(tok[1:], 10, 64)
			if err != nil || v.OverflowInt(n) {
				panic(bsNotPlain{"integer out of range: " + tok})
			}
			v.SetInt(n)
		}
	case tok[0] == 'd':
		f, _ := strconv.ParseFloat(map[string]string{"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[tok[1:]]+tok[1:], 64)
		if g, err := strconv.ParseFloat(tok[1:], 64); err == nil {
			f = g
		}
		if t.Kind() == reflect.Interface {
			return reflect.ValueOf(f)
		}
		v.SetFloat(f)
	default:
		if tok[0] != 'l' && tok[0] != 'u' && tok[0] != 'e' && tok[0] != 'm' {
			panic(bsNotPlain{"not a value of Go's: " + tok})
		}
		n, _ := strconv.Atoi(tok[1:])
		if tok[0] == 'm' {
			if t.Kind() == reflect.Interface {
				t = reflect.TypeOf(map[interface{}]interface{}{})
			}
			m := reflect.MakeMapWithSize(t, n)
			for i := 0; i < n; i++ {
				r.skip()
				k := bsGet(r, t.Key())
				r.skip()
				m.SetMapIndex(k, bsGet(r, t.Elem()))
			}
			return m
		}
		if t.Kind() == reflect.Interface {
			t = reflect.TypeOf([]interface{}{})
		}
		if t.Kind() == reflect.Array {
			for i := 0; i < n; i++ {
				r.skip()
				v.Index(i).Set(bsGet(r, t.Elem()))
			}
			return v
		}
		s := reflect.MakeSlice(t, n, n)
		for i := 0; i < n; i++ {
			r.skip()
			s.Index(i).Set(bsGet(r, t.Elem()))
		}
		return s
	}
	return v
}

func bsSend(f *os.File, payload []byte) {
	f.Write(append([]byte(strconv.Itoa(len(payload))+"\n"), payload...))
}

func bsRecv(f *os.File) []byte {
	header := []byte{}
	one := make([]byte, 1)
	for len(header) == 0 || header[len(header)-1] != '\n' {
		if n, _ := f.Read(one); n == 0 {
			return nil
		}
		header = append(header, one[0])
	}
	size, _ := strconv.Atoi(string(header[:len(header)-1]))
	data := make([]byte, size)
	got := 0
	for got < size {
		n, _ := f.Read(data[got:])
		if n == 0 {
			return nil
		}
		got += n
	}
	return data
}

func bsText(s string) string { return "s" + strconv.Itoa(len(s)) + ":" + s }

var _ = fmt.Sprint
'''
