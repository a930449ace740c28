"""Java's exceptions across the split run, for both sides (class `BsThrown`, next to `Bs`).

The server writes what the candidate threw as `<class name>\\n<message>` (the name alone where it
has no message; at most 4,096 characters of it); the proxy throws it in the tests as that JDK type
(a class of java.*) with the candidate's message, so a test of `getMessage()` sees it, else as a
RuntimeException naming it (docs/sandbox.md).
"""
from __future__ import annotations

EXCEPTIONS = r'''class BsThrown {
    /** `<class name>\n<message>` of what the candidate threw (the name alone where it has no message). */
    static String text(Throwable e) {
        if (e == null) return "java.lang.Throwable";
        String message = e.getMessage();
        if (message == null) return e.getClass().getName();
        return e.getClass().getName() + "\n" + (message.length() > 4096 ? message.substring(0, 4096) : message);
    }

    /** The candidate's exception as its own JDK type (a class of java.*), else a RuntimeException naming
     * it; with the candidate's message where it had one (a test of `getMessage()` sees it). */
    static void raise(String text) {
        int newline = text.indexOf('\n');
        String name = newline < 0 ? text : text.substring(0, newline);
        String message = newline < 0 ? "the candidate raised " + name : text.substring(newline + 1);
        Throwable t = null;
        if (name.startsWith("java.")) {
            try {
                Class<?> c = Class.forName(name);
                if (Throwable.class.isAssignableFrom(c)) {
                    try { t = (Throwable) c.getConstructor(String.class).newInstance(message); }
                    catch (ReflectiveOperationException e) { t = (Throwable) c.getConstructor().newInstance(); }
                }
            } catch (Throwable e) { t = null; }
        }
        if (t == null) t = new RuntimeException(newline < 0 ? message : "the candidate raised " + name + ": " + message);
        Bs.<RuntimeException>sneaky(t);
    }
}
'''
