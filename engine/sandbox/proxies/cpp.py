"""C++'s side of the split run: the candidate's server and the tests' proxy (g++ -std=c++17).

The codec is a set of overloads in `namespace bs`: bool (`t`/`f`), the integer types (`i`, a
value out of the declared type's range is refused), double (`d`; float `g s3:f32`, long double
`g s10:LongDouble`), char (a one-character string), std::string and const char* (`s`),
std::vector and std::array (`l`), std::pair and std::tuple (`u`), std::set / unordered_set (`e`),
std::map / unordered_map (`m`), std::optional (`n` or the value; `g s4:Some` around an optional).
The server calls the function through a pointer whose parameter types it decodes into
(`std::decay_t` of each); the proxy has the task's signature and decodes the reply into the
function's own return type (`bs::result_of(&NAME)`; a reference into a copy that lives on),
so no type is ever written twice. Changed arguments taken by reference, this call's or an earlier
call's the candidate kept a pointer to, come back in an `a` reply (engine.sandbox.arguments).
"""
from __future__ import annotations

from engine.sandbox import syntax
from engine.sandbox.relay import SandboxProgram

CODEC = r'''
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace bs {
struct NotPlain : std::runtime_error { using std::runtime_error::runtime_error; };
struct Reader { const std::string& s; size_t p = 0; };
// A type that writes `n` for one of its values: an optional holding one is engaged, so it crosses
// as `g s4:Some <value>` (an engaged optional<optional<T>> holding nullopt is not a nullopt).
template <class T> struct empty_able : std::false_type {};
template <class T> struct empty_able<std::optional<T>> : std::true_type {};
// Values a decoded `const char*` or a returned reference points into: they live as long as the
// program, as the candidate's own would for the tests.
template <class T> T& lasting(T value) { static std::deque<T> kept; kept.push_back(std::move(value)); return kept.back(); }

inline void put(std::string& o, bool v);
inline void put(std::string& o, char v);
template <class T> std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>> put(std::string& o, T v);
template <class T> std::enable_if_t<std::is_floating_point_v<T>> put(std::string& o, T v);
inline void put(std::string& o, const std::string& v);
inline void put(std::string& o, const char* v);
template <class T, class A> void put(std::string& o, const std::vector<T, A>& v);
template <class A, class B> void put(std::string& o, const std::pair<A, B>& v);
template <class... T> void put(std::string& o, const std::tuple<T...>& v);
template <class T> void put(std::string& o, const std::set<T>& v);
template <class T> void put(std::string& o, const std::unordered_set<T>& v);
template <class K, class V> void put(std::string& o, const std::map<K, V>& v);
template <class K, class V> void put(std::string& o, const std::unordered_map<K, V>& v);
template <class T> void put(std::string& o, const std::optional<T>& v);
template <class T, size_t N> void put(std::string& o, const std::array<T, N>& v);

inline void get(Reader& r, bool& v);
inline void get(Reader& r, char& v);
template <class T> std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>> get(Reader& r, T& v);
template <class T> std::enable_if_t<std::is_floating_point_v<T>> get(Reader& r, T& v);
inline void get(Reader& r, std::string& v);
template <class T, class A> void get(Reader& r, std::vector<T, A>& v);
template <class A, class B> void get(Reader& r, std::pair<A, B>& v);
template <class... T> void get(Reader& r, std::tuple<T...>& v);
template <class T> void get(Reader& r, std::set<T>& v);
template <class T> void get(Reader& r, std::unordered_set<T>& v);
template <class K, class V> void get(Reader& r, std::map<K, V>& v);
template <class K, class V> void get(Reader& r, std::unordered_map<K, V>& v);
template <class T> void get(Reader& r, std::optional<T>& v);
template <class T, size_t N> void get(Reader& r, std::array<T, N>& v);
inline void get(Reader& r, const char*& v);

inline std::string token(Reader& r) {
    size_t end = r.s.find(' ', r.p);
    if (end == std::string::npos) end = r.s.size();
    std::string t = r.s.substr(r.p, end - r.p);
    r.p = end;
    return t;
}
inline void skip(Reader& r) { if (r.p < r.s.size() && r.s[r.p] == ' ') ++r.p; }
inline size_t count(Reader& r, char tag) {
    std::string t = token(r);
    if (t.empty() || t[0] != tag) throw NotPlain(std::string("expected a '") + tag + "' value, got " + t.substr(0, 20));
    return std::stoul(t.substr(1));
}
template <class T> void items(std::string& o, char tag, const T& v) {
    o += tag + std::to_string(v.size());
    for (const auto& x : v) { o += ' '; put(o, x); }
}

inline void put(std::string& o, bool v) { o += v ? "t" : "f"; }
inline void put(std::string& o, char v) { put(o, std::string(1, v)); }
template <class T> std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>> put(std::string& o, T v) {
    o += "i" + std::to_string(v);
}
template <class T> std::enable_if_t<std::is_floating_point_v<T>> put(std::string& o, T v) {
    if (std::isnan(v)) { o += "dnan"; return; }
    if (std::isinf(v)) { o += v > 0 ? "dinf" : "d-inf"; return; }
    char b[96];
    // A long double as `g s10:LongDouble l2 d<as a double> s<n>:<%La>`: the engine compares the
    // double, the tests get every bit back (strtold); a float as `g s3:f32`, compared at a
    // float's resolution (engine.sandbox.compare).
    if constexpr (std::is_same_v<T, long double>) {
        char exact[64];
        std::snprintf(exact, sizeof exact, "%La", v);
        std::snprintf(b, sizeof b, "g s10:LongDouble l2 d%.17g ", static_cast<double>(v));
        o += b;
        put(o, std::string(exact));
        return;
    }
    std::snprintf(b, sizeof b, std::is_same_v<T, float> ? "g s3:f32 d%.9g" : "d%.17g", static_cast<double>(v));
    o += b;
}
inline void put(std::string& o, const std::string& v) { o += "s" + std::to_string(v.size()) + ":" + v; }
inline void put(std::string& o, const char* v) { put(o, std::string(v ? v : "")); }
template <class T, class A> void put(std::string& o, const std::vector<T, A>& v) {
    o += "l" + std::to_string(v.size());
    for (size_t i = 0; i < v.size(); ++i) { o += ' '; T x = v[i]; put(o, x); }
}
template <class A, class B> void put(std::string& o, const std::pair<A, B>& v) { o += "u2 "; put(o, v.first); o += ' '; put(o, v.second); }
template <class... T> void put(std::string& o, const std::tuple<T...>& v) {
    o += "u" + std::to_string(sizeof...(T));
    std::apply([&](const auto&... x) { ((o += ' ', put(o, x)), ...); }, v);
}
template <class T> void put(std::string& o, const std::set<T>& v) { items(o, 'e', v); }
template <class T> void put(std::string& o, const std::unordered_set<T>& v) { items(o, 'e', v); }
template <class K, class V> void put(std::string& o, const std::map<K, V>& v) {
    o += "m" + std::to_string(v.size());
    for (const auto& kv : v) { o += ' '; put(o, kv.first); o += ' '; put(o, kv.second); }
}
template <class K, class V> void put(std::string& o, const std::unordered_map<K, V>& v) {
    o += "m" + std::to_string(v.size());
    for (const auto& kv : v) { o += ' '; put(o, kv.first); o += ' '; put(o, kv.second); }
}
template <class T> void put(std::string& o, const std::optional<T>& v) {
    if (!v) { o += "n"; return; }
    if constexpr (empty_able<T>::value) o += "g s4:Some ";
    put(o, *v);
}
template <class T, size_t N> void put(std::string& o, const std::array<T, N>& v) { items(o, 'l', v); }

inline void get(Reader& r, bool& v) {
    std::string t = token(r);
    if (t != "t" && t != "f") throw NotPlain("expected a bool");
    v = t == "t";
}
inline void get(Reader& r, std::string& v) {
    size_t colon = r.s.find(':', r.p);
    if (r.s[r.p] != 's' || colon == std::string::npos) throw NotPlain("expected a string");
    size_t n = std::stoul(r.s.substr(r.p + 1, colon - r.p - 1));
    v = r.s.substr(colon + 1, n);
    r.p = colon + 1 + n;
}
inline void get(Reader& r, char& v) {
    std::string s;
    get(r, s);
    if (s.size() != 1) throw NotPlain("expected one character");
    v = s[0];
}
template <class T> std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>> get(Reader& r, T& v) {
    std::string t = token(r);
    if (t.size() < 2 || t[0] != 'i') throw NotPlain("expected an integer");
    errno = 0;
    char* end = nullptr;
    long double x = std::is_signed_v<T> ? static_cast<long double>(std::strtoll(t.c_str() + 1, &end, 10))
                                        : static_cast<long double>(std::strtoull(t.c_str() + 1, &end, 10));
    if (errno || *end || x < static_cast<long double>(std::numeric_limits<T>::min()) ||
        x > static_cast<long double>(std::numeric_limits<T>::max()))
        throw NotPlain("integer out of the declared type's range");
    v = static_cast<T>(std::is_signed_v<T> ? std::strtoll(t.c_str() + 1, nullptr, 10) : std::strtoull(t.c_str() + 1, nullptr, 10));
}
template <class T> std::enable_if_t<std::is_floating_point_v<T>> get(Reader& r, T& v) {
    if (std::is_same_v<T, float> && r.s.compare(r.p, 9, "g s3:f32 ") == 0) r.p += 9;
    const bool exact = std::is_same_v<T, long double> && r.s.compare(r.p, 17, "g s10:LongDouble ") == 0;
    if (exact) { r.p += 17; if (count(r, 'l') != 2) throw NotPlain("expected a long double"); skip(r); }
    std::string t = token(r);
    if (t.size() < 2 || t[0] != 'd') throw NotPlain("expected a float");
    v = static_cast<T>(std::strtod(t.c_str() + 1, nullptr));
    if (exact) {
        std::string bits;
        skip(r);
        get(r, bits);
        const long double x = std::strtold(bits.c_str(), nullptr);
        if (static_cast<double>(x) != static_cast<double>(v)) throw NotPlain("a long double's two values differ");
        v = static_cast<T>(x);
    }
}
inline void get(Reader& r, const char*& v) {
    std::string s;
    get(r, s);
    v = lasting(std::move(s)).c_str();
}
template <class T, size_t N> void get(Reader& r, std::array<T, N>& v) {
    if (count(r, 'l') != N) throw NotPlain("an array of another length");
    for (size_t i = 0; i < N; ++i) { skip(r); get(r, v[i]); }
}
template <class T, class A> void get(Reader& r, std::vector<T, A>& v) {
    size_t n = count(r, 'l');
    v.clear();
    for (size_t i = 0; i < n; ++i) { skip(r); T x{}; get(r, x); v.push_back(x); }
}
template <class A, class B> void get(Reader& r, std::pair<A, B>& v) {
    if (count(r, 'u') != 2) throw NotPlain("expected a pair");
    skip(r); get(r, v.first); skip(r); get(r, v.second);
}
template <class... T> void get(Reader& r, std::tuple<T...>& v) {
    if (count(r, 'u') != sizeof...(T)) throw NotPlain("wrong tuple size");
    std::apply([&](auto&... x) { ((skip(r), get(r, x)), ...); }, v);
}
template <class T> void get(Reader& r, std::set<T>& v) {
    size_t n = count(r, 'e');
    for (size_t i = 0; i < n; ++i) { skip(r); T x{}; get(r, x); v.insert(x); }
}
template <class T> void get(Reader& r, std::unordered_set<T>& v) {
    size_t n = count(r, 'e');
    for (size_t i = 0; i < n; ++i) { skip(r); T x{}; get(r, x); v.insert(x); }
}
template <class K, class V> void get(Reader& r, std::map<K, V>& v) {
    size_t n = count(r, 'm');
    for (size_t i = 0; i < n; ++i) { skip(r); K k{}; get(r, k); skip(r); V x{}; get(r, x); v[k] = x; }
}
template <class K, class V> void get(Reader& r, std::unordered_map<K, V>& v) {
    size_t n = count(r, 'm');
    for (size_t i = 0; i < n; ++i) { skip(r); K k{}; get(r, k); skip(r); V x{}; get(r, x); v[k] = x; }
}
template <class T> void get(Reader& r, std::optional<T>& v) {
    if (r.s.compare(r.p, 1, "n") == 0 && (r.p + 1 == r.s.size() || r.s[r.p + 1] == ' ')) { ++r.p; v.reset(); return; }
    // `g s4:Some` around a value that can be `n`; an untagged one (an engine's input) is unambiguous.
    if (empty_able<T>::value && r.s.compare(r.p, 10, "g s4:Some ") == 0) r.p += 10;
    T x{};
    get(r, x);
    v = x;
}

inline void send(int fd, const std::string& payload) {
    std::string data = std::to_string(payload.size()) + "\n" + payload;
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n <= 0) std::_Exit(1);
        done += static_cast<size_t>(n);
    }
}
inline bool recv(int fd, std::string& out) {
    std::string header;
    char c;
    while (header.empty() || header.back() != '\n') {
        if (::read(fd, &c, 1) != 1) return false;
        header += c;
    }
    size_t n = std::stoul(header);
    out.assign(n, '\0');
    size_t got = 0;
    while (got < n) {
        ssize_t k = ::read(fd, &out[got], n - got);
        if (k <= 0) return false;
        got += static_cast<size_t>(k);
    }
    return true;
}
inline std::string text(const std::string& s) { return "s" + std::to_string(s.size()) + ":" + s; }
template <class R, class... A> R result_of(R (*)(A...));
template <class... P> struct Params {};
template <class R, class... P> Params<P...> params_of(R (*)(P...));
// A parameter by non-const reference: the caller sees what the call (or a later one) does to it.
template <class P> constexpr bool shared_v = std::is_lvalue_reference_v<P> && !std::is_const_v<std::remove_reference_t<P>>;
}  // namespace bs
'''

SERVER = r'''
#include <cxxabi.h>
#include <exception>
#include <typeinfo>
namespace bs {
// The declared type of what the function threw, by name (`std::out_of_range`, `int`, a class of the
// candidate's), blanks made `_`: one name, never a list of bases whose words the engine compares.
inline std::string thrown_name() {
    const std::type_info* type = abi::__cxa_current_exception_type();
    if (!type) return "unknown";
    int status = 0;
    char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
    std::string out = status == 0 && name ? name : type->name();
    std::free(name);
    for (char& c : out) if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') c = '_';
    return out;
}
inline bool utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = s[i];
        const size_t n = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 9;
        if (n == 9 || s.size() - i <= n) return false;
        const unsigned char d = n ? s[i + 1] : 0;
        if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) || (c == 0xF4 && d > 0x8F)) return false;
        for (size_t k = 1; k <= n; ++k) if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        i += n + 1;
    }
    return true;
}
// `\n` and the exception's what(), for the tests' `e.what()`; nothing where it has none or not UTF-8.
inline std::string thrown_message() {
    try { throw; } catch (const std::exception& e) {
        const std::string what = e.what();
        return utf8(what) ? "\n" + what : "";
    } catch (...) { return ""; }
}
// Every earlier call's arguments, in the order they crossed, with the state the caller last saw
// of those taken by non-const reference (others: ""): a candidate may keep a pointer to one and
// change it later, as the caller sees in one process. A local of main, out of the candidate's reach.
struct Held { std::function<std::string()> state; std::string last; };
template <class P, size_t I, class Owned> Held held_one(const Owned& owned) {
    if constexpr (shared_v<P>) return Held{[owned]() { std::string o; put(o, std::get<I>(*owned)); return o; }, ""};
    else return Held{[]() { return std::string(); }, ""};
}
template <class... A, size_t... I> void hold(std::vector<Held>& held, const std::shared_ptr<std::tuple<std::decay_t<A>...>>& owned,
                                             std::index_sequence<I...>) {
    (held.push_back(held_one<A, I>(owned)), ...);
}
// ` l<2m> i<k> <state>...` for the earlier arguments that changed since the caller last saw them, or "".
inline std::string earlier_changes(std::vector<Held>& held, size_t first) {
    std::string o;
    size_t changed = 0;
    for (size_t k = 0; k < first; ++k) {
        std::string now = held[k].state();
        if (now == held[k].last) continue;
        held[k].last = now;
        ++changed;
        o += " i" + std::to_string(k) + " " + now;
    }
    return changed ? " l" + std::to_string(2 * changed) + o : "";
}
template <class R, class... A> std::string serve(R (*f)(A...), const std::string& call, std::vector<Held>& held) {
    Reader r{call};
    if (count(r, 'l') != sizeof...(A)) return "z " + text("wrong number of arguments");
    auto owned = std::make_shared<std::tuple<std::decay_t<A>...>>();
    std::tuple<std::decay_t<A>...>& args = *owned;
    try {
        std::apply([&](auto&... x) { ((skip(r), get(r, x)), ...); }, args);
    } catch (const std::exception& e) {
        return "z " + text(std::string("arguments: ") + e.what());
    }
    std::string before, out;
    try {
        std::apply([&](const auto&... x) { ((before += ' ', put(before, x)), ...); }, args);
    } catch (const std::exception& e) { return "z " + text(std::string("arguments: ") + e.what()); }
    const size_t first = held.size();
    hold<A...>(held, owned, std::index_sequence_for<A...>{});
    for (size_t k = first; k < held.size(); ++k) held[k].last = held[k].state();
    try {
        if constexpr (std::is_void_v<R>) {
            std::apply(f, args);
            out += "n";
        } else {
            auto value = std::apply(f, args);
            try { put(out, value); } catch (const std::exception& e) { return "z " + text(e.what()); }
        }
    } catch (...) {
        return "x " + text(thrown_name() + thrown_message());
    }
    // An argument taken by reference that the call changed, or an earlier call's that it changed:
    // its state is part of the answer, as the caller sees it (engine.sandbox.arguments).
    std::string after, earlier;
    try {
        std::apply([&](const auto&... x) { ((after += ' ', put(after, x)), ...); }, args);
        earlier = earlier_changes(held, first);
        for (size_t k = first; k < held.size(); ++k) held[k].last = held[k].state();
    } catch (const std::exception& e) { return "z " + text(e.what()); }
    if (after == before && earlier.empty()) return "o " + out;
    return (earlier.empty() ? "a l2 " : "a l3 ") + out + " l" + std::to_string(sizeof...(A)) + after + earlier;
}
}  // namespace bs

int main() {
    std::string call;
    std::vector<bs::Held> held;
    while (bs::recv(3, call)) bs::send(4, bs::serve(&ENTRY, call, held));
    return 0;
}
'''

PROXY_CALL = r'''
#include <mutex>
#include <new>
namespace bs {
// The candidate's exception, thrown in the tests as the standard type of its name with its what()
// (any other name as std::runtime_error with that what(), or naming it where it had none).
[[noreturn]] inline void throw_named(const std::string& text) {
    const size_t newline = text.find('\n');
    const std::string name = text.substr(0, newline);
    const std::string what = newline == std::string::npos ? "the candidate raised " + name : text.substr(newline + 1);
    if (name == "std::out_of_range") throw std::out_of_range(what);
    if (name == "std::invalid_argument") throw std::invalid_argument(what);
    if (name == "std::domain_error") throw std::domain_error(what);
    if (name == "std::length_error") throw std::length_error(what);
    if (name == "std::logic_error") throw std::logic_error(what);
    if (name == "std::range_error") throw std::range_error(what);
    if (name == "std::overflow_error") throw std::overflow_error(what);
    if (name == "std::underflow_error") throw std::underflow_error(what);
    if (name == "std::bad_alloc") throw std::bad_alloc();
    if (name == "std::exception") throw std::exception();
    throw std::runtime_error(what);
}
// The tests' argument made what the candidate's call left it (a parameter by non-const reference).
template <class T> void restore(Reader& r, T& x) {
    std::decay_t<T> v{};
    get(r, v);
    if constexpr (!std::is_const_v<T>) x = std::move(v);
}
// The tests' arguments of every call, numbered as the server numbers its copies: for one taken by
// non-const reference, how to make it a state the server reports later.
inline std::vector<std::function<void(Reader&)>>& kept() { static std::vector<std::function<void(Reader&)>> k; return k; }
template <class P, class T> void keep(T& x) {
    if constexpr (shared_v<P>) kept().push_back([p = &x](Reader& r) { restore(r, *p); });
    else kept().push_back([](Reader&) { throw NotPlain("an earlier argument not taken by reference"); });
}
template <class R, class... P, class... A> R call(Params<P...>, A&... args) {
    std::string payload = "l" + std::to_string(sizeof...(A));
    ((payload += ' ', put(payload, args)), ...);
    std::string reply;
    bool received;
    size_t first;
    {
        // One call at a time on the channel: the tests' threads may call concurrently, and the
        // tests' arguments of every call are numbered in the order the server takes the calls.
        static std::mutex channel;
        std::lock_guard<std::mutex> hold(channel);
        first = kept().size();
        (keep<P>(args), ...);
        send(5, payload);
        received = recv(6, reply);
    }
    if (!received) { std::fputs("candidate broken: the engine closed the call channel\n", stderr); std::_Exit(1); }
    Reader r{reply, 2};
    if (reply[0] == 'o' || reply[0] == 'a') {
        const bool after = reply[0] == 'a';
        // Decoding never throws inside the tests (their catch would take it for an answer).
        try {
            if (after) { count(r, 'l'); skip(r); }
            std::conditional_t<std::is_void_v<R>, int, std::decay_t<R>> value{};
            if constexpr (std::is_void_v<R>) { if (after) token(r); } else { get(r, value); }
            if (after) { skip(r); count(r, 'l'); ((skip(r), restore(r, args)), ...); }
            if (after && r.p < reply.size()) {
                // `a l3`: earlier calls' arguments this call changed, `i<k> <state>` each.
                skip(r);
                const size_t n = count(r, 'l');
                for (size_t j = 0; j < n / 2; ++j) {
                    skip(r);
                    const size_t k = std::stoul(token(r).substr(1));
                    if (k >= first) throw NotPlain("no such earlier argument");
                    skip(r);
                    kept()[k](r);
                }
            }
            if (r.p != reply.size()) throw NotPlain("bytes after the reply");
            // A returned reference refers to a copy that lives on: the proxy's own value would not.
            if constexpr (std::is_void_v<R>) return;
            else if constexpr (std::is_reference_v<R>) return static_cast<R>(lasting(std::move(value)));
            else return value;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "candidate broken: the reply does not decode into the declared type: %s\n", e.what());
            std::_Exit(1);
        }
    }
    std::string why;
    try { get(r, why); } catch (const std::exception& e) {
        std::fprintf(stderr, "candidate broken: %s\n", e.what());
        std::_Exit(1);
    }
    if (reply[0] == 'x') throw_named(why);
    std::fprintf(stderr, "candidate broken: %s\n", why.c_str());
    std::_Exit(1);
}
}  // namespace bs
'''


def jobs(task: dict, code: str, script) -> tuple[SandboxProgram, SandboxProgram]:
    from engine.sandbox.programs import CPP_SPLIT_HARNESS, join_sources, rename_main

    header = syntax.function_header("cpp", task["signature"])
    context = task.get("context") or ""
    names = ", ".join(name for name, _ in header.params)
    proxy = (f"{task['signature']} {{\n    return bs::call<decltype(bs::result_of(&{header.name}))>("
             f"decltype(bs::params_of(&{header.name})){{}}{', ' if names else ''}{names});\n}}\n")
    server_files = {"server.cpp": join_sources(CODEC, context, code, SERVER.replace("ENTRY", header.name))}
    renamed = rename_main(task["tests"], r"\bint\s+main\s*\(\s*(?:void\s*)?\)", "int babelscore_tests_main()", "cpp")
    tests_files = {"tests.cpp": join_sources(CODEC, PROXY_CALL, context, proxy, renamed, CPP_SPLIT_HARNESS)}
    compile_flags = "g++ -std=c++17 -O1 -w -o program"
    return (SandboxProgram(server_files, script(f"{compile_flags} server.cpp", "./program")),
            SandboxProgram(tests_files, script(f"{compile_flags} tests.cpp", "./program")))
