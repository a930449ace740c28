"""Java's arguments after a call, for both sides of the split run (class `BsArgs`, next to `Bs`).

What the caller shares with a call in one process is its arrays, Lists, Maps and Sets. The proxy
writes the state a reply gives back into the tests' own objects only where it differs (a List of
unchanged size by `set(i, v)`, so a fixed-size `Arrays.asList` takes an in-place sort), and tells
where the tests' object refuses the change (`List.of`), so the call throws as in one process. The
server keeps every call's arrays and collections, numbered in the order they crossed, and reports
an earlier one a later call changed (a candidate may keep one in a static field); the proxy keeps
the tests' own the same way (engine.sandbox.arguments, docs/sandbox.md).
"""
from __future__ import annotations

ARGUMENTS = r'''import java.lang.reflect.*;
import java.util.*;

class BsArgs {
    /** One argument's state as it crosses (its declared type fixes the tags). */
    static String one(Object v, Type declared) {
        StringBuilder o = new StringBuilder();
        Bs.put(o, v, declared, 1);
        return o.toString();
    }

    /** An array, List, Map or Set: what the caller shares with the call in one process. */
    static boolean mutable(Object v) {
        return v != null && (v.getClass().isArray() || v instanceof Collection || v instanceof Map);
    }

    /**
     * The tests' argument `mine` made what the candidate's call left it (`got`), in place, and
     * only where it differs: false where `mine` refuses the change (a List.of, an Arrays.asList
     * that changed size), where one process would have thrown inside the call.
     */
    @SuppressWarnings("unchecked")
    static boolean restore(Object mine, Object got, Type declared) {
        if (mine == null || got == null || Objects.deepEquals(mine, got) || one(mine, declared).equals(one(got, declared))) return true;
        try {
            if (mine.getClass().isArray() && got.getClass() == mine.getClass()) {
                System.arraycopy(got, 0, mine, 0, Math.min(Array.getLength(mine), Array.getLength(got)));
            } else if (mine instanceof List && got instanceof List) {
                List<Object> m = (List<Object>) mine, g = (List<Object>) got;
                // set(i, v) keeps a fixed-size List (Arrays.asList) working where its size is unchanged.
                if (m.size() == g.size()) { for (int i = 0; i < g.size(); i++) m.set(i, g.get(i)); }
                else { m.clear(); m.addAll(g); }
            } else if (mine instanceof Map && got instanceof Map) {
                ((Map<Object, Object>) mine).clear();
                ((Map<Object, Object>) mine).putAll((Map<Object, Object>) got);
            } else if (mine instanceof Set && got instanceof Set) {
                ((Set<Object>) mine).clear();
                ((Set<Object>) mine).addAll((Set<Object>) got);
            }
        } catch (UnsupportedOperationException e) {
            return false;
        }
        return true;
    }

    /** An earlier call's array or collection, with the state the caller last saw of it. */
    static class Held {
        final Object value;
        final Type type;
        String last;
        Object got;
        Held(Object value, Type type, String last) { this.value = value; this.type = type; this.last = last; }
    }

    /**
     * ` l<2m> i<k> <state>...` for the server's earlier arguments (`held`, below `first`) that
     * changed since last reported, or "".
     */
    static String earlierChanges(List<Held> held, int first) {
        StringBuilder o = new StringBuilder();
        int changed = 0;
        for (int k = 0; k < first; k++) {
            Held h = held.get(k);
            String now = one(h.value, h.type);
            if (now.equals(h.last)) continue;
            h.last = now;
            changed++;
            o.append(" i").append(k).append(' ').append(now);
        }
        return changed == 0 ? "" : " l" + (2 * changed) + o;
    }

    /** This call's arguments (from `first` on) as the caller now sees them. */
    static void seen(List<Held> held, int first) {
        for (int k = first; k < held.size(); k++) held.get(k).last = one(held.get(k).value, held.get(k).type);
    }

    static void hold(List<Held> into, Object[] args, Type[] types, boolean withState) {
        for (int i = 0; i < args.length; i++)
            if (mutable(args[i])) into.add(new Held(args[i], types[i], withState ? one(args[i], types[i]) : null));
    }

    // Proxy: the tests' arrays and collections of every earlier call, numbered as the server's.
    static final List<Held> kept = new ArrayList<>();
}
'''
