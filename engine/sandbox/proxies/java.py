"""Java's side of the split run: the candidate's server and the tests' proxy class.

The codec (class `Bs`, one file for both sides) encodes by the runtime value and its declared
generic type: null, Boolean, the integer boxes and BigInteger (`i`), Double/Float (`d`), Character
and String (`s`), arrays and Lists (`l`), Sets (`e`), Maps (`m`), Optional (always a typed value
`g s8:Optional`); where the declared type does not fix the class (a `List<Object>`), an Integer,
Short, Byte, BigInteger, Float or Character crosses as a typed value naming its class, as Java's
`equals` tells it from the Long, Double or String an untagged value decodes into there (a Float
always: compared at a float's resolution, engine.sandbox.compare). A List the candidate wrote
itself travels as the values it yields. Decoding follows the declared generic type through
reflection (arguments on the server, the reply in the proxy).
The proxy class has the candidate class's name and the task's signature; changed arguments, this
call's or an earlier call's, come back in an `a` reply (engine.sandbox.arguments, java_arguments).
"""
from __future__ import annotations

from engine.sandbox import syntax
from engine.sandbox.proxies.java_arguments import ARGUMENTS
from engine.sandbox.proxies.java_exceptions import EXCEPTIONS
from engine.sandbox.relay import SandboxProgram

CODEC = r'''import java.io.*;
import java.lang.reflect.*;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class Bs {
    static class NotPlain extends RuntimeException { NotPlain(String why) { super(why); } }

    // A value whose class its declared type does not fix (an element of a List<Object>) crosses
    // with its class's name (`g s7:Integer i1`) where Java's equals tells it from the class an
    // untagged value decodes into there (Long, Double, String); Optional always does, so that
    // null and Optional.empty() differ.
    static final Map<String, Class<?>> TAGGED = new HashMap<>();
    static {
        for (Class<?> c : new Class<?>[] {Integer.class, Short.class, Byte.class, BigInteger.class, Float.class, Character.class})
            TAGGED.put(c.getSimpleName(), c);
    }

    static Class<?> raw(Type t) {
        if (t instanceof WildcardType) t = ((WildcardType) t).getUpperBounds()[0];
        if (t instanceof ParameterizedType) return (Class<?>) ((ParameterizedType) t).getRawType();
        if (t instanceof GenericArrayType) return Object[].class;
        if (!(t instanceof Class)) return Object.class;
        Class<?> c = (Class<?>) t;
        if (!c.isPrimitive()) return c;
        return c == int.class ? Integer.class : c == long.class ? Long.class : c == short.class ? Short.class : c == byte.class ? Byte.class
            : c == char.class ? Character.class : c == float.class ? Float.class : c == double.class ? Double.class : c == boolean.class ? Boolean.class : c;
    }

    static Type param(Type t, int i) {
        if (t instanceof WildcardType) t = ((WildcardType) t).getUpperBounds()[0];
        if (t instanceof ParameterizedType) {
            Type[] ps = ((ParameterizedType) t).getActualTypeArguments();
            if (i < ps.length) return ps[i];
        }
        return Object.class;
    }

    // A Float always: the value verdict compares it at a float's resolution (engine.sandbox.compare).
    static void tag(StringBuilder o, Class<?> c, Type declared) {
        if (TAGGED.containsKey(c.getSimpleName()) && (raw(declared) != c || c == Float.class)) { o.append("g "); text(o, c.getSimpleName()); o.append(' '); }
    }

    static void put(StringBuilder o, Object v, Type declared, int depth) {
        if (depth > 32) throw new NotPlain("nested deeper than 32 levels");
        if (v == null) { o.append('n'); return; }
        Class<?> c = v.getClass();
        if (c == Boolean.class) { o.append(((Boolean) v) ? 't' : 'f'); return; }
        if (c == Integer.class || c == Long.class || c == Short.class || c == Byte.class || c == BigInteger.class) {
            tag(o, c, declared);
            o.append('i').append(v);
            return;
        }
        if (c == Double.class || c == Float.class) {
            tag(o, c, declared);
            double d = ((Number) v).doubleValue();
            o.append(Double.isNaN(d) ? "dnan" : Double.isInfinite(d) ? (d > 0 ? "dinf" : "d-inf") : "d" + Double.toString(d));
            return;
        }
        if (c == Character.class || c == String.class) {
            String s = v.toString();
            if (!wellFormed(s)) throw new NotPlain("a string with a lone surrogate is not plain data (UTF-8 cannot carry it)");
            tag(o, c, declared);
            text(o, s);
            return;
        }
        if (c.isArray()) {
            int n = Array.getLength(v);
            Type component = declared instanceof GenericArrayType ? ((GenericArrayType) declared).getGenericComponentType() : c.getComponentType();
            o.append('l').append(n);
            for (int i = 0; i < n; i++) { o.append(' '); put(o, Array.get(v, i), component, depth + 1); }
            return;
        }
        if (v instanceof Optional) {
            Optional<?> x = (Optional<?>) v;
            o.append("g s8:Optional ");
            if (x.isPresent()) put(o, x.get(), raw(declared) == Optional.class ? param(declared, 0) : Object.class, depth + 1); else o.append('n');
            return;
        }
        if (v instanceof Map) {
            Map<?, ?> m = (Map<?, ?>) v;
            boolean typed = Map.class.isAssignableFrom(raw(declared));
            List<Object> items = new ArrayList<>();
            for (Map.Entry<?, ?> e : m.entrySet()) { items.add(e.getKey()); items.add(e.getValue()); }
            o.append('m').append(items.size() / 2);
            for (int i = 0; i < items.size(); i++) {
                o.append(' ');
                put(o, items.get(i), typed ? param(declared, i % 2) : Object.class, depth + 1);
            }
            return;
        }
        if (v instanceof Collection) {
            Type element = Collection.class.isAssignableFrom(raw(declared)) ? param(declared, 0) : Object.class;
            List<Object> items = new ArrayList<>();
            for (Object x : (Collection<?>) v) items.add(x);
            o.append(v instanceof Set ? 'e' : 'l').append(items.size());
            for (Object x : items) { o.append(' '); put(o, x, element, depth + 1); }
            return;
        }
        throw new NotPlain("a " + c.getName() + " is not plain data");
    }

    // getBytes(UTF_8) writes a lone surrogate as '?', so a string of one would pass for "?".
    static boolean wellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (Character.isHighSurrogate(ch) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) i++;
            else if (Character.isSurrogate(ch)) return false;
        }
        return true;
    }

    static void text(StringBuilder o, String s) {
        o.append('s').append(s.getBytes(StandardCharsets.UTF_8).length).append(':').append(s);
    }

    static class Reader {
        final byte[] s;
        int p;
        Reader(byte[] s, int p) { this.s = s; this.p = p; }
        String token() {
            int end = p;
            while (end < s.length && s[end] != ' ') end++;
            String t = new String(s, p, end - p, StandardCharsets.US_ASCII);
            p = end;
            return t;
        }
        void skip() { if (p < s.length && s[p] == ' ') p++; }
        String string() {
            if (s[p] != 's') throw new NotPlain("expected a string");
            int colon = p;
            while (s[colon] != ':') colon++;
            int n = Integer.parseInt(new String(s, p + 1, colon - p - 1, StandardCharsets.US_ASCII));
            String v = new String(s, colon + 1, n, StandardCharsets.UTF_8);
            p = colon + 1 + n;
            return v;
        }
        int count(char tag) {
            String t = token();
            if (t.isEmpty() || t.charAt(0) != tag) throw new NotPlain("expected '" + tag + "', got " + t);
            return Integer.parseInt(t.substring(1));
        }
        boolean typed() {
            if (s[p] != 'g' || p + 1 >= s.length || s[p + 1] != ' ') return false;
            p += 2;
            return true;
        }
        boolean none() {
            if (s[p] == 'n' && (p + 1 == s.length || s[p + 1] == ' ')) { p++; return true; }
            return false;
        }
    }

    static double number(String t) {
        if (t.isEmpty() || t.charAt(0) != 'd') throw new NotPlain("expected a float, got " + t);
        String x = t.substring(1);
        return x.equals("nan") ? Double.NaN : x.equals("inf") ? Double.POSITIVE_INFINITY : x.equals("-inf") ? Double.NEGATIVE_INFINITY : Double.parseDouble(x);
    }

    static BigInteger integer(String t) {
        if (t.isEmpty() || t.charAt(0) != 'i') throw new NotPlain("expected an integer, got " + t);
        return new BigInteger(t.substring(1));
    }

    static Object get(Reader r, Type t) {
        if (t instanceof WildcardType) t = ((WildcardType) t).getUpperBounds()[0];
        Class<?> raw = t instanceof ParameterizedType ? (Class<?>) ((ParameterizedType) t).getRawType() : t instanceof Class ? (Class<?>) t : Object.class;
        Type[] params = t instanceof ParameterizedType ? ((ParameterizedType) t).getActualTypeArguments() : new Type[0];
        if (r.typed()) {
            String name = r.string();
            r.skip();
            if (name.equals("Optional")) {
                if (!raw.isAssignableFrom(Optional.class)) throw new NotPlain("an Optional where a " + raw.getName() + " is declared");
                if (r.none()) return Optional.empty();
                return Optional.of(get(r, raw == Optional.class && params.length > 0 ? params[0] : Object.class));
            }
            Class<?> k = TAGGED.get(name);
            if (k == null) throw new NotPlain("unknown type " + name);
            // The tagged class where the declared type admits it (Object, Number), else the declared type.
            return get(r, raw != k && raw.isAssignableFrom(k) ? k : t);
        }
        if (!raw.isPrimitive() && r.none()) return null;
        if (raw == Optional.class) return Optional.of(get(r, params.length > 0 ? params[0] : Object.class));
        if (raw == String.class) return r.string();
        if (raw == char.class || raw == Character.class) {
            String s = r.string();
            if (s.length() != 1) throw new NotPlain("expected one character");
            return s.charAt(0);
        }
        if (raw == boolean.class || raw == Boolean.class) {
            String b = r.token();
            if (!b.equals("t") && !b.equals("f")) throw new NotPlain("expected a bool");
            return b.equals("t");
        }
        if (raw == int.class || raw == Integer.class) return integer(r.token()).intValueExact();
        if (raw == long.class || raw == Long.class) return integer(r.token()).longValueExact();
        if (raw == short.class || raw == Short.class) return integer(r.token()).shortValueExact();
        if (raw == byte.class || raw == Byte.class) return integer(r.token()).byteValueExact();
        if (raw == BigInteger.class) return integer(r.token());
        if (raw == double.class || raw == Double.class) return number(r.token());
        if (raw == float.class || raw == Float.class) return (float) number(r.token());
        if (raw.isArray() || t instanceof GenericArrayType) {
            Type component = t instanceof GenericArrayType ? ((GenericArrayType) t).getGenericComponentType() : raw.getComponentType();
            Class<?> componentClass = component instanceof Class ? (Class<?>) component : Object.class;
            int n = r.count('l');
            Object array = Array.newInstance(componentClass, n);
            for (int i = 0; i < n; i++) { r.skip(); Array.set(array, i, get(r, component)); }
            return array;
        }
        if (Map.class.isAssignableFrom(raw)) {
            int n = r.count('m');
            Map<Object, Object> m = SortedMap.class.isAssignableFrom(raw) ? new TreeMap<>() : new HashMap<>();
            for (int i = 0; i < n; i++) {
                r.skip(); Object k = get(r, params.length > 0 ? params[0] : Object.class);
                r.skip(); m.put(k, get(r, params.length > 1 ? params[1] : Object.class));
            }
            return m;
        }
        if (Set.class.isAssignableFrom(raw)) {
            int n = r.count('e');
            Set<Object> s = SortedSet.class.isAssignableFrom(raw) ? new TreeSet<>() : new HashSet<>();
            for (int i = 0; i < n; i++) { r.skip(); s.add(get(r, params.length > 0 ? params[0] : Object.class)); }
            return s;
        }
        if (Collection.class.isAssignableFrom(raw)) {
            String tok = r.token();
            if (tok.isEmpty() || (tok.charAt(0) != 'l' && tok.charAt(0) != 'u')) throw new NotPlain("expected a list, got " + tok);
            int n = Integer.parseInt(tok.substring(1));
            List<Object> l = raw == LinkedList.class ? new LinkedList<>() : new ArrayList<>();
            for (int i = 0; i < n; i++) { r.skip(); l.add(get(r, params.length > 0 ? params[0] : Object.class)); }
            return l;
        }
        if (raw == Object.class || raw == Number.class) {
            char tag = (char) r.s[r.p];
            if (tag == 's') return r.string();
            if (tag == 'i') return integer(r.token()).longValue();
            if (tag == 'd') return number(r.token());
            if (tag == 't' || tag == 'f') return r.token().equals("t");
            if (tag == 'm') return get(r, Map.class);
            if (tag == 'e') return get(r, Set.class);
            return get(r, List.class);
        }
        throw new NotPlain("cannot decode a " + raw.getName());
    }

    static void send(OutputStream out, String payload) throws IOException {
        byte[] body = payload.getBytes(StandardCharsets.UTF_8);
        out.write((body.length + "\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
    }

    static byte[] recv(InputStream in) throws IOException {
        StringBuilder header = new StringBuilder();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) return null;
            header.append((char) c);
        }
        byte[] data = new byte[Integer.parseInt(header.toString())];
        int got = 0;
        while (got < data.length) {
            int n = in.read(data, got, data.length - got);
            if (n < 0) return null;
            got += n;
        }
        return data;
    }

    static Method method(Class<?> owner, String name, int arity) {
        for (Method m : owner.getDeclaredMethods())
            if (m.getName().equals(name) && m.getParameterCount() == arity) { m.setAccessible(true); return m; }
        return null;
    }

    static String quoted(String s) {
        StringBuilder o = new StringBuilder();
        text(o, wellFormed(s) ? s : s.replaceAll("\\p{Cs}", "\uFFFD"));
        return o.toString();
    }

    static String state(Object[] args, Type[] types) {
        StringBuilder o = new StringBuilder("l").append(args.length);
        for (int i = 0; i < args.length; i++) { o.append(' '); put(o, args[i], types[i], 1); }
        return o.toString();
    }

    public static void serve(String className, String name, int arity) throws Exception {
        InputStream calls = new FileInputStream("/proc/self/fd/3");
        OutputStream replies = new FileOutputStream("/proc/self/fd/4");
        Method m = null;
        Object self = null;
        String why = "no method " + name + " with " + arity + " parameter(s)";
        try {
            m = method(Class.forName(className), name, arity);
            if (m != null && !Modifier.isStatic(m.getModifiers())) {
                Constructor<?> make = m.getDeclaringClass().getDeclaredConstructor();
                make.setAccessible(true);
                self = make.newInstance();
            }
        } catch (Throwable e) { m = null; why = "the candidate did not load: " + e; }
        // Every earlier call's arrays and collections, numbered in the order they crossed: a
        // candidate may keep one (a static field) and change it in a later call, which the caller
        // sees in one process. A local, out of the candidate's reach.
        List<BsArgs.Held> held = new ArrayList<>();
        byte[] call;
        while ((call = recv(calls)) != null) {
            if (m == null) { send(replies, "z " + quoted(why)); continue; }
            String reply;
            try {
                Reader r = new Reader(call, 0);
                if (r.count('l') != arity) throw new NotPlain("wrong number of arguments");
                Type[] types = m.getGenericParameterTypes();
                Object[] args = new Object[arity];
                for (int i = 0; i < arity; i++) { r.skip(); args[i] = get(r, types[i]); }
                String before = state(args, types);
                // Kept with the state the caller has of them: what a call that raises changed in
                // them is reported with a later call's answer.
                int first = held.size();
                BsArgs.hold(held, args, types, true);
                Object value;
                try { value = m.invoke(self, args); } catch (InvocationTargetException e) {
                    send(replies, "x " + quoted(BsThrown.text(e.getCause())));
                    continue;
                }
                // A call that changed its arguments (an array's elements, a List, Map or Set) answers
                // their state after it too, and that of any earlier call's it changed: the caller sees
                // the change (engine.sandbox.arguments). The common call changes neither: `o`.
                String after = state(args, types);
                String earlier = BsArgs.earlierChanges(held, first);
                BsArgs.seen(held, first);
                boolean changed = !after.equals(before) || !earlier.isEmpty();
                StringBuilder o = new StringBuilder(!changed ? "o " : earlier.isEmpty() ? "a l2 " : "a l3 ");
                if (m.getReturnType() == void.class) o.append('n'); else put(o, value, m.getGenericReturnType(), 0);
                if (changed) o.append(' ').append(after).append(earlier);
                reply = o.toString();
            } catch (Throwable e) {
                reply = "z " + quoted(String.valueOf(e));
            }
            send(replies, reply);
        }
        Runtime.getRuntime().halt(0);
    }

    static OutputStream calls;
    static InputStream replies;
    static final Object CALL_LOCK = new Object();

    @SuppressWarnings("unchecked")
    public static <T> T call(Class<?> owner, String name, Object... args) {
        try {
            Method m = method(owner, name, args.length);
            StringBuilder o = new StringBuilder("l").append(args.length);
            // An argument that is not plain data stops the tests (a NotPlain thrown here would meet their `catch`).
            Type[] types = m.getGenericParameterTypes();
            try {
                for (int i = 0; i < args.length; i++) { o.append(' '); put(o, args[i], types[i], 1); }
            } catch (Throwable e) {
                broken("an argument does not cross: " + e);
            }
            byte[] reply;
            int first;
            // One call at a time on the channel: the tests' threads may call concurrently, and this
            // call's arrays and collections are numbered as the server numbers its copies.
            synchronized (CALL_LOCK) {
                if (calls == null) { calls = new FileOutputStream("/proc/self/fd/5"); replies = new FileInputStream("/proc/self/fd/6"); }
                first = BsArgs.kept.size();
                BsArgs.hold(BsArgs.kept, args, types, false);
                send(calls, o.toString());
                reply = recv(replies);
            }
            if (reply == null) broken("the engine closed the call channel");
            Reader r = new Reader(reply, 2);
            Object value = null;
            String why = null;
            // Decoding never throws inside the tests (their `catch` would take it for an answer):
            // a reply that does not decode into the declared type stops the tests.
            boolean after = reply[0] == 'a';
            boolean refused = false;
            try {
                if (after) { r.count('l'); r.skip(); }
                if (after && m.getReturnType() == void.class) r.token();
                if ((reply[0] == 'o' || after) && m.getReturnType() != void.class) value = get(r, m.getGenericReturnType());
                else if (reply[0] != 'o' && !after) why = r.string();
                if (after) {
                    // The candidate changed its arguments or an earlier call's: the tests' arrays and
                    // collections change the same way.
                    r.skip();
                    r.count('l');
                    Object[] got = new Object[args.length];
                    for (int i = 0; i < args.length; i++) { r.skip(); got[i] = get(r, types[i]); }
                    List<BsArgs.Held> earlier = new ArrayList<>();
                    if (r.p < reply.length) {
                        r.skip();
                        int n = r.count('l');
                        if (n % 2 != 0) throw new NotPlain("earlier arguments come in pairs");
                        for (int j = 0; j < n / 2; j++) {
                            r.skip();
                            int k = integer(r.token()).intValueExact();
                            if (k < 0 || k >= first) throw new NotPlain("no earlier argument " + k);
                            r.skip();
                            BsArgs.Held h = BsArgs.kept.get(k);
                            earlier.add(new BsArgs.Held(h.value, h.type, null));
                            earlier.get(j).got = get(r, h.type);
                        }
                    }
                    if (r.p != reply.length) throw new NotPlain("bytes after the reply");
                    for (BsArgs.Held h : earlier) refused |= !BsArgs.restore(h.value, h.got, h.type);
                    for (int i = 0; i < args.length; i++) refused |= !BsArgs.restore(args[i], got[i], types[i]);
                }
            } catch (Throwable e) {
                broken("the reply does not decode into the declared type: " + e);
            }
            // One process would have thrown inside the call where it changed an immutable collection of the tests'.
            if (refused) Bs.<RuntimeException>sneaky(new UnsupportedOperationException("the candidate changed an immutable collection"));
            if (reply[0] == 'o' || after) return (T) value;
            if (reply[0] == 'x') BsThrown.raise(why);
            broken(why);
        } catch (IOException e) {
            broken(e.toString());
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    static <E extends Throwable> void sneaky(Throwable t) throws E { throw (E) t; }

    static void broken(String why) {
        System.err.println("candidate broken: " + why);
        System.err.flush();
        Runtime.getRuntime().halt(1);
    }
}
'''

SERVER = '''public class BsServer {
    public static void main(String[] args) throws Exception { Bs.serve("CLASS", "NAME", ARITY); }
}
'''


def jobs(task: dict, code: str, command) -> tuple[SandboxProgram, SandboxProgram]:
    from engine.sandbox.programs import JAVA_SPLIT_HARNESS, java_class_name, java_exits_rewritten

    header = syntax.function_header("java", task["signature"])
    owner = java_class_name(task["code"])
    names = ", ".join(name for name, _ in header.params)
    # The arguments as an explicit Object[]: a lone String[] or int[][] would otherwise be taken
    # for the varargs list itself.
    call = f'Bs.call({owner}.class, "{header.name}", new Object[]{{{names}}})'
    body = f"{call};" if header.result == "void" else f"return {call};"
    proxy = f"{task.get('context') or ''}\n\npublic class {owner} {{\n    {task['signature']} {{\n        {body}\n    }}\n}}\n"
    server_files = {f"{java_class_name(code)}.java": code, "Bs.java": CODEC, "BsArgs.java": ARGUMENTS, "BsThrown.java": EXCEPTIONS,
                    "BsServer.java": SERVER.replace("CLASS", owner).replace("NAME", header.name).replace("ARITY", str(len(header.params)))}
    tests_files = {f"{owner}.java": proxy.lstrip("\n"), f"{task['entry_point']}.java": java_exits_rewritten(task["tests"]),
                   "Bs.java": CODEC, "BsArgs.java": ARGUMENTS, "BsThrown.java": EXCEPTIONS,
                   "BabelscoreHarness.java": JAVA_SPLIT_HARNESS.replace("ENTRY", task["entry_point"])}
    return SandboxProgram(server_files, command("BsServer")), SandboxProgram(tests_files, command("BabelscoreHarness"))
