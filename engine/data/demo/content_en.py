"""Demo files with English comments (hand-written for babelscore; see DATA_CARD.md)."""
from __future__ import annotations

from engine.data.demo.spec import DemoFile

LANGUAGE = "en"

FILES = (
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package org.example.text;

import java.util.Objects;

public final class StringUtils {

    private StringUtils() {
    }

    @@COMMENT@@
    public static String truncate(String text, int maxLength, String ellipsis) {
        Objects.requireNonNull(text, "text");
        if (maxLength < ellipsis.length()) {
            throw new IllegalArgumentException("maxLength shorter than ellipsis: " + maxLength);
        }
        if (text.length() <= maxLength) {
            return text;
        }
        // Never split a surrogate pair: that would leave half an emoji at the end.
        int end = maxLength - ellipsis.length();
        if (end > 0 && Character.isHighSurrogate(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(0, end) + ellipsis;
    }
}
""",
        comment="Shortens the given text to at most maxLength characters, appending the ellipsis when anything "
        "was cut off. The ellipsis counts towards the limit, so the result is never longer than maxLength.",
        paraphrase="Shortens the given string so that it has no more than maxLength characters; if it had to be "
        "cut, the ellipsis is added and its length is included in the limit.",
        wrong_identifier="Shortens the given text to at most end characters, appending the ellipsis when anything "
        "was cut off. The ellipsis counts towards the limit, so the result is never longer than end.",
        missing_detail="Shortens the given text to at most maxLength characters, appending the ellipsis when "
        "anything was cut off.",
        wrong_statement="Shortens the given text to exactly maxLength characters and then appends the ellipsis, so "
        "the result can be longer than maxLength; shorter text is padded with spaces.",
        wrong_language="Shortens the given tekst tot hoogstens maxLength tekens en voegt de ellips toe als er iets "
        "is weggeknipt. De ellips telt mee voor de limiet, dus het resultaat is nooit langer dan maxLength.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package org.example.graph;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;

/** Breadth-first search over a graph stored as adjacency lists; nodes are numbered 0..n-1. */
public class UnweightedGraph {

    private final List<List<Integer>> adjacency;

    public UnweightedGraph(List<List<Integer>> adjacency) {
        this.adjacency = adjacency;
    }

    public int[] distancesFrom(int source) {
        int[] dist = new int[adjacency.size()];
        Arrays.fill(dist, -1);
        dist[source] = 0;
        Deque<Integer> queue = new ArrayDeque<>();
        queue.add(source);
        while (!queue.isEmpty()) {
            int node = queue.poll();
            for (int next : adjacency.get(node)) {
                @@COMMENT@@
                if (dist[next] == -1) {
                    dist[next] = dist[node] + 1;
                    queue.add(next);
                }
            }
        }
        return dist;
    }
}
""",
        comment="A node is settled the first time BFS reaches it, which is always along a shortest path, so "
        "dist[next] is final and next is never queued twice.",
        paraphrase="A node is final as soon as the search first reaches it: breadth-first order guarantees that "
        "this is a shortest path, so dist[next] never changes again and next is enqueued only once.",
        wrong_identifier="A node is settled the first time BFS reaches it, which is always along a shortest path, "
        "so dist[source] is final and next is never queued twice.",
        missing_detail="A node is settled the first time BFS reaches it, so next is never queued twice.",
        wrong_statement="A node is settled only after all of its neighbours have been queued, so dist[next] may "
        "still decrease when a shorter path is found later.",
        wrong_language="A node is definitief zodra BFS hem voor het eerst bereikt, want dat gebeurt altijd via een "
        "kortste pad; daarom verandert dist[next] niet meer en komt next nooit twee keer in de wachtrij.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package org.example.cache;

import java.util.LinkedHashMap;
import java.util.Map;

public class LruCache<K, V> extends LinkedHashMap<K, V> {

    private final int capacity;

    public LruCache(int capacity) {
        // accessOrder = true: get() moves an entry to the end, so the head is the least recently used.
        super(16, 0.75f, true);
        this.capacity = capacity;
    }

    @@COMMENT@@
    @Override
    protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > capacity;
    }
}
""",
        comment="Called by put after every insertion; returning true evicts the least recently used entry, which "
        "keeps the cache at no more than capacity entries.",
        paraphrase="Called by put once a new entry has been added; answering true makes the map drop the entry "
        "that was used longest ago, so the size never goes above capacity.",
        wrong_identifier="Called by put after every insertion; returning true evicts the least recently used "
        "entry, which keeps the cache at no more than eldest entries.",
        missing_detail="Called by put after every insertion; returning true evicts an entry.",
        wrong_statement="Called by put after every insertion; returning true evicts the most recently inserted "
        "entry, so new values are rejected once the cache holds capacity entries.",
        wrong_language="Called by put na elke invoeging; als deze methode true teruggeeft, wordt het minst recent "
        "gebruikte item verwijderd, zodat de cache nooit meer dan capacity items bevat.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package org.example.io;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public final class FileUtils {

    private FileUtils() {
    }

    @@COMMENT@@
    public static List<String> readNonBlankLines(Path path) throws IOException {
        List<String> lines = new ArrayList<>();
        try (BufferedReader reader = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            String line;
            while ((line = reader.readLine()) != null) {
                String trimmed = line.strip();
                if (!trimmed.isEmpty() && !trimmed.startsWith("#")) {
                    lines.add(trimmed);
                }
            }
        }
        return lines;
    }
}
""",
        comment="Reads the UTF-8 file at path and returns its lines with surrounding whitespace stripped, skipping "
        "blank lines and lines that start with the # comment marker.",
        paraphrase="Reads the UTF-8 file at path line by line and collects every trimmed line, leaving out empty "
        "ones and those beginning with #, which mark comments.",
        wrong_identifier="Reads the UTF-8 file at reader and returns its lines with surrounding whitespace "
        "stripped, skipping blank lines and lines that start with the # comment marker.",
        missing_detail="Reads the UTF-8 file at path and returns its lines, skipping blank lines.",
        wrong_statement="Reads the UTF-8 file at path and returns every line unchanged, blank lines included; lines "
        "starting with # are returned with the marker removed.",
        wrong_language="Reads the UTF-8 bestand op path en geeft de regels terug zonder witruimte aan het begin of "
        "eind, waarbij lege regels en regels die met # beginnen worden overgeslagen.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package org.example.time;

import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

public final class LenientDateParser {

    private static final List<DateTimeFormatter> FORMATS = List.of(
            DateTimeFormatter.ISO_LOCAL_DATE,
            DateTimeFormatter.ofPattern("dd/MM/yyyy"),
            DateTimeFormatter.ofPattern("d MMM yyyy", Locale.ENGLISH));

    private LenientDateParser() {
    }

    public static Optional<LocalDate> parse(String input) {
        if (input == null || input.isBlank()) {
            return Optional.empty();
        }
        @@COMMENT@@
        for (DateTimeFormatter format : FORMATS) {
            try {
                return Optional.of(LocalDate.parse(input.trim(), format));
            } catch (DateTimeParseException ignored) {
                // not this format; try the next one
            }
        }
        return Optional.empty();
    }
}
""",
        comment="Try each format in order and return the first successful parse. Slash dates are read day first "
        "(dd/MM/yyyy), so 03/04/2024 is the third of April, not March 4.",
        paraphrase="Try each format one after the other and return as soon as one of them parses; dates with "
        "slashes are taken as day/month/year, so 03/04/2024 means 3 April.",
        wrong_identifier="Try each format in order and return the first successful parse. Slash dates are read "
        "day first (ISO_LOCAL_DATE), so 03/04/2024 is the third of April, not March 4.",
        missing_detail="Try each format in order and return the first successful parse.",
        wrong_statement="Try each format in order and return the last one that parses. Slash dates are read month "
        "first, so 03/04/2024 is March 4.",
        wrong_language="Try each format op volgorde en geef het eerste geslaagde resultaat terug; datums met "
        "schuine strepen worden gelezen als dag/maand/jaar, dus 03/04/2024 is 3 april.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package org.example.net;

public class TokenBucket {

    private final long capacity;
    private final double refillPerNano;
    private double tokens;
    private long lastRefill;

    public TokenBucket(long capacity, double tokensPerSecond) {
        this.capacity = capacity;
        this.refillPerNano = tokensPerSecond / 1_000_000_000.0;
        this.tokens = capacity;
        this.lastRefill = System.nanoTime();
    }

    @@COMMENT@@
    public synchronized boolean tryAcquire() {
        long now = System.nanoTime();
        tokens = Math.min(capacity, tokens + (now - lastRefill) * refillPerNano);
        lastRefill = now;
        if (tokens >= 1.0) {
            tokens -= 1.0;
            return true;
        }
        return false;
    }
}
""",
        comment="Takes one token if available and returns true; otherwise returns false immediately, without "
        "blocking. Tokens refill continuously at the configured rate, up to capacity.",
        paraphrase="Takes one token when the bucket has one and reports success; if it is empty the call fails "
        "right away instead of waiting. The bucket refills steadily but never beyond capacity.",
        wrong_identifier="Takes one token if available and returns true; otherwise returns false immediately, "
        "without blocking. Tokens refill continuously at the configured rate, up to lastRefill.",
        missing_detail="Takes one token if available and returns true; otherwise returns false.",
        wrong_statement="Takes one token and blocks until one becomes available, then returns true. Tokens are "
        "refilled in a single batch of capacity tokens once per second.",
        wrong_language="Takes one token als er een beschikbaar is en geeft dan true terug; anders meteen false, "
        "zonder te wachten. Tokens worden continu aangevuld volgens het ingestelde tempo, tot capacity.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import re
import unicodedata

_NON_WORD = re.compile(r"[^a-z0-9]+")


@@COMMENT@@
def slugify(text: str, max_length: int = 60) -> str:
    normalized = unicodedata.normalize("NFKD", text)
    ascii_text = normalized.encode("ascii", "ignore").decode("ascii").lower()
    slug = _NON_WORD.sub("-", ascii_text).strip("-")
    if len(slug) > max_length:
        slug = slug[:max_length].rsplit("-", 1)[0]
    return slug
""",
        comment="Turn a title into a URL slug: accents are dropped, every run of other characters becomes one "
        "hyphen, and slugs longer than max_length are cut at a hyphen so no word is split.",
        paraphrase="Turn a title into something usable in a URL: strip accents, collapse anything that is not a "
        "letter or digit into a single dash, and shorten past max_length at a dash rather than mid-word.",
        wrong_identifier="Turn a title into a URL slug: accents are dropped, every run of other characters becomes "
        "one hyphen, and slugs longer than _NON_WORD are cut at a hyphen so no word is split.",
        missing_detail="Turn a title into a URL slug: accents are dropped and every run of other characters "
        "becomes one hyphen.",
        wrong_statement="Turn a title into a URL slug: accented letters are replaced by hyphens, upper case is "
        "kept, and titles longer than max_length raise a ValueError.",
        wrong_language="Turn a title into een slug voor in een URL: accenten verdwijnen, elke reeks andere tekens "
        "wordt één koppelteken en te lange slugs worden bij een koppelteken afgekapt.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections import deque


def topological_order(graph: dict[str, list[str]]) -> list[str]:
    indegree = {node: 0 for node in graph}
    for targets in graph.values():
        for target in targets:
            indegree[target] = indegree.get(target, 0) + 1

    # Sorted so that the order is the same on every run when several nodes are ready.
    ready = deque(sorted(node for node, degree in indegree.items() if degree == 0))
    order = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for target in graph.get(node, []):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)

    @@COMMENT@@
    if len(order) != len(indegree):
        raise ValueError("graph has a cycle")
    return order
""",
        comment="Nodes on a cycle never reach in-degree zero, so they never get into order; an order shorter than "
        "the number of nodes therefore means the graph is not a DAG.",
        paraphrase="Nodes on a cycle always keep at least one incoming edge and are never emitted, so if order is "
        "shorter than the node count the graph contains a cycle.",
        wrong_identifier="Nodes on a cycle never reach in-degree zero, so they never get into graph; an order "
        "shorter than the number of nodes therefore means the graph is not a DAG.",
        missing_detail="Nodes on a cycle make order shorter than the number of nodes, which is reported as an "
        "error.",
        wrong_statement="Nodes on a cycle are appended to order twice, so an order longer than the number of nodes "
        "means the graph is not a DAG.",
        wrong_language="Nodes on a cycle bereiken nooit ingraad nul en komen dus nooit in order terecht; een order "
        "die korter is dan het aantal knopen betekent daarom dat de graaf een cyclus bevat.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import csv
import logging
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)


def read_records(path: Path, required: tuple[str, ...] = ("id", "name")) -> Iterator[dict[str, str]]:
    # utf-8-sig drops the byte-order mark that spreadsheet programs put in front of the header.
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in required if column not in (reader.fieldnames or [])]
        if missing:
            raise KeyError(f"{path}: missing columns {missing}")
        for line_number, row in enumerate(reader, start=2):
            @@COMMENT@@
            if any(not (row[column] or "").strip() for column in required):
                logger.warning("%s:%d: skipped, a required field is empty", path, line_number)
                continue
            yield row
""",
        comment="Skip rows where a required column is empty or only whitespace instead of failing the whole "
        "import; line_number counts the header as line 1, so the warning points at the right line.",
        paraphrase="Skip rows where any required field is blank, logging a warning rather than aborting the "
        "import; numbering starts at 2 because the header is line 1 of the file.",
        wrong_identifier="Skip rows where a required column is empty or only whitespace instead of failing the "
        "whole import; missing counts the header as line 1, so the warning points at the right line.",
        missing_detail="Skip rows where a required column is empty instead of failing the whole import.",
        wrong_statement="Skip rows where a required column is empty; the first such row stops the import with a "
        "KeyError, and line_number starts at 0.",
        wrong_language="Skip rows where een verplichte kolom leeg is of alleen spaties bevat, in plaats van de hele "
        "import af te breken; line_number telt de kop als regel 1, zodat de waarschuwing klopt.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import functools
import time
from collections.abc import Callable
from typing import Any


def ttl_cache(seconds: float) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        entries: dict[tuple, tuple[float, Any]] = {}

        @functools.wraps(func)
        def wrapper(*args: Any) -> Any:
            now = time.monotonic()
            hit = entries.get(args)
            @@COMMENT@@
            if hit is not None and now - hit[0] < seconds:
                return hit[1]
            value = func(*args)
            entries[args] = (now, value)
            return value

        wrapper.cache_clear = entries.clear
        return wrapper

    return decorator
""",
        comment="A cached value is reused only while it is younger than seconds; time.monotonic is used so that "
        "changing the system clock cannot keep stale entries alive.",
        paraphrase="A cached value counts as fresh for at most seconds after it was computed; the monotonic clock "
        "is used because adjusting the wall clock could otherwise extend its life.",
        wrong_identifier="A cached value is reused only while it is younger than now; time.monotonic is used so "
        "that changing the system clock cannot keep stale entries alive.",
        missing_detail="A cached value is reused only while it is younger than seconds.",
        wrong_statement="A cached value is reused forever once computed; seconds only limits how many entries are "
        "kept, and time.monotonic follows changes to the system clock.",
        wrong_language="A cached value wordt alleen hergebruikt zolang het jonger is dan seconds; time.monotonic "
        "wordt gebruikt zodat het verzetten van de systeemklok geen verouderde waarden in leven houdt.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import re
from datetime import timedelta

_PART = re.compile(r"(\\d+)([hms])")
_UNITS = {"h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str) -> timedelta:
    compact = text.replace(" ", "").lower()
    @@COMMENT@@
    if not compact or _PART.sub("", compact):
        raise ValueError(f"not a duration: {text!r}")
    parts = {_UNITS[unit]: int(amount) for amount, unit in _PART.findall(compact)}
    return timedelta(**parts)
""",
        comment="Removing every recognised part from compact must leave nothing behind; anything left over, such "
        "as 1h30x or a bare 90, means the input is not a valid duration.",
        paraphrase="Removing every recognised number-and-unit pair from compact has to produce an empty string; "
        "leftovers like a bare 90 or an unknown unit as in 30x make the text invalid.",
        wrong_identifier="Removing every recognised part from _UNITS must leave nothing behind; anything left "
        "over, such as 1h30x or a bare 90, means the input is not a valid duration.",
        missing_detail="Removing every recognised part from compact must leave nothing behind.",
        wrong_statement="Removing every recognised part from compact leaves only the unit letters, which are "
        "summed afterwards; a bare 90 is read as 90 seconds.",
        wrong_language="Removing every recognised deel uit compact mag niets overlaten; alles wat overblijft, zoals "
        "1h30x of een losse 90, betekent dat de invoer geen geldige tijdsduur is.",
    ),
)
