"""Demo files with Dutch comments (hand-written for babelscore; see DATA_CARD.md)."""
from __future__ import annotations

from engine.data.demo.spec import DemoFile

LANGUAGE = "nl"

FILES = (
    DemoFile(
        program="java",
        style="javadoc",
        source=r"""package nl.voorbeeld.validatie;

public final class Bsn {

    private Bsn() {
    }

    @@COMMENT@@
    public static boolean isGeldig(String bsn) {
        if (bsn == null || !bsn.matches("\\d{9}")) {
            return false;
        }
        int som = 0;
        for (int i = 0; i < 8; i++) {
            som += (9 - i) * (bsn.charAt(i) - '0');
        }
        // Het laatste cijfer telt negatief mee; dat is het verschil met de gewone elfproef.
        som -= bsn.charAt(8) - '0';
        return som % 11 == 0;
    }
}
""",
        comment="Controleert of een burgerservicenummer uit precies negen cijfers bestaat en aan de elfproef "
        "voldoet. Geeft false terug als bsn null is of andere tekens bevat, in plaats van een exceptie te gooien.",
        paraphrase="Controleert of een BSN geldig is: het moet uit negen cijfers bestaan en de elfproef doorstaan. "
        "Bij null of ongeldige tekens volgt false; er wordt geen exceptie gegooid.",
        wrong_identifier="Controleert of een burgerservicenummer uit precies negen cijfers bestaat en aan de "
        "elfproef voldoet. Geeft false terug als som null is of andere tekens bevat, in plaats van een exceptie "
        "te gooien.",
        missing_detail="Controleert of een burgerservicenummer aan de elfproef voldoet.",
        wrong_statement="Controleert of een burgerservicenummer uit acht of negen cijfers bestaat en aan de "
        "elfproef voldoet. Gooit een IllegalArgumentException als bsn null is.",
        wrong_language="Controleert of een citizen service number has exactly nine digits and passes the eleven "
        "test. Returns false when bsn is null or contains other characters, instead of throwing an exception.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package nl.voorbeeld.grafen;

import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;

public class KortstePad {

    public record Kant(int naar, int gewicht) {
    }

    /** Dijkstra met een binaire heap; alle gewichten moeten niet-negatief zijn. */
    public static long[] afstanden(List<List<Kant>> graaf, int start) {
        long[] afstand = new long[graaf.size()];
        Arrays.fill(afstand, Long.MAX_VALUE);
        afstand[start] = 0;
        PriorityQueue<long[]> wachtrij = new PriorityQueue<>((a, b) -> Long.compare(a[1], b[1]));
        wachtrij.add(new long[] {start, 0});
        while (!wachtrij.isEmpty()) {
            long[] huidig = wachtrij.poll();
            int knoop = (int) huidig[0];
            @@COMMENT@@
            if (huidig[1] > afstand[knoop]) {
                continue;
            }
            for (Kant kant : graaf.get(knoop)) {
                long nieuw = afstand[knoop] + kant.gewicht();
                if (nieuw < afstand[kant.naar()]) {
                    afstand[kant.naar()] = nieuw;
                    wachtrij.add(new long[] {kant.naar(), nieuw});
                }
            }
        }
        return afstand;
    }
}
""",
        comment="Een knoop kan vaker in de wachtrij staan omdat PriorityQueue geen decrease-key heeft; verouderde "
        "items met een grotere afstand dan afstand[knoop] slaan we gewoon over.",
        paraphrase="Een knoop kan meerdere keren in de wachtrij terechtkomen, want PriorityQueue kent geen "
        "decrease-key; een item waarvan de afstand intussen verbeterd is, negeren we.",
        wrong_identifier="Een knoop kan vaker in de wachtrij staan omdat PriorityQueue geen decrease-key heeft; "
        "verouderde items met een grotere afstand dan afstand[start] slaan we gewoon over.",
        missing_detail="Een knoop kan vaker in de wachtrij staan; verouderde items slaan we over.",
        wrong_statement="Een knoop kan maar één keer in de wachtrij staan, dus deze controle stopt het algoritme "
        "zodra er een knoop met een te grote afstand gevonden wordt.",
        wrong_language="Een knoop kan appear in the queue more than once because PriorityQueue has no "
        "decrease-key; stale entries with a larger distance than afstand[knoop] are simply skipped.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package nl.voorbeeld.bestanden;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

public final class Kopieerder {

    private static final int BUFFERGROOTTE = 64 * 1024;

    private Kopieerder() {
    }

    @@COMMENT@@
    public static long kopieer(Path bron, Path doel) throws IOException {
        Path tijdelijk = doel.resolveSibling(doel.getFileName() + ".part");
        long totaal = 0;
        try (InputStream in = Files.newInputStream(bron);
             OutputStream uit = Files.newOutputStream(tijdelijk)) {
            byte[] buffer = new byte[BUFFERGROOTTE];
            int gelezen;
            while ((gelezen = in.read(buffer)) != -1) {
                uit.write(buffer, 0, gelezen);
                totaal += gelezen;
            }
        }
        Files.move(tijdelijk, doel, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return totaal;
    }
}
""",
        comment="Kopieert bron naar doel via een tijdelijk .part-bestand dat pas na het schrijven wordt hernoemd, "
        "zodat doel nooit half geschreven is. Geeft het aantal gekopieerde bytes terug.",
        paraphrase="Kopieert bron naar doel door eerst naar een .part-bestand te schrijven en dat daarna in één "
        "keer te hernoemen; zo bestaat doel nooit maar half. Het resultaat is het aantal bytes.",
        wrong_identifier="Kopieert bron naar doel via een tijdelijk .part-bestand dat pas na het schrijven wordt "
        "hernoemd, zodat bron nooit half geschreven is. Geeft het aantal gekopieerde bytes terug.",
        missing_detail="Kopieert bron naar doel en geeft het aantal gekopieerde bytes terug.",
        wrong_statement="Kopieert bron naar doel en verwijdert daarna bron, zodat het bestand feitelijk verplaatst "
        "wordt. Geeft true terug als het kopiëren gelukt is.",
        wrong_language="Kopieert bron naar the target through a temporary .part file that is renamed only after "
        "writing, so the target is never half written. Returns the number of bytes copied.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package nl.voorbeeld.cache;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

public class VerlopendeCache<K, V> {

    private record Item<V>(V waarde, Instant verloopt) {
    }

    private final ConcurrentHashMap<K, Item<V>> items = new ConcurrentHashMap<>();
    private final Duration levensduur;
    // De klok wordt meegegeven zodat tests de tijd kunnen laten verspringen.
    private final Clock klok;

    public VerlopendeCache(Duration levensduur, Clock klok) {
        this.levensduur = levensduur;
        this.klok = klok;
    }

    public void zet(K sleutel, V waarde) {
        items.put(sleutel, new Item<>(waarde, klok.instant().plus(levensduur)));
    }

    @@COMMENT@@
    public Optional<V> haal(K sleutel) {
        Item<V> item = items.get(sleutel);
        if (item == null) {
            return Optional.empty();
        }
        if (!klok.instant().isBefore(item.verloopt())) {
            items.remove(sleutel, item);
            return Optional.empty();
        }
        return Optional.of(item.waarde());
    }
}
""",
        comment="Geeft de waarde bij sleutel terug zolang die niet verlopen is. Een verlopen item wordt meteen "
        "verwijderd, maar alleen als het niet intussen door een nieuwere waarde is vervangen.",
        paraphrase="Geeft de waarde van sleutel terug als de levensduur nog niet voorbij is. Verlopen items ruimen "
        "we direct op, tenzij een andere thread er al een nieuwe waarde voor heeft gezet.",
        wrong_identifier="Geeft de waarde bij levensduur terug zolang die niet verlopen is. Een verlopen item wordt "
        "meteen verwijderd, maar alleen als het niet intussen door een nieuwere waarde is vervangen.",
        missing_detail="Geeft de waarde bij sleutel terug zolang die niet verlopen is.",
        wrong_statement="Geeft de waarde bij sleutel terug, ook als die al verlopen is; verlopen items worden pas "
        "opgeruimd wanneer zet opnieuw wordt aangeroepen.",
        wrong_language="Geeft de waarde for the given key as long as it has not expired. An expired item is "
        "removed right away, but only if no newer value has replaced it in the meantime.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package nl.voorbeeld.datum;

import java.time.DayOfWeek;
import java.time.LocalDate;
import java.util.Set;

public final class Werkdagen {

    private Werkdagen() {
    }

    public static int tel(LocalDate van, LocalDate tot, Set<LocalDate> feestdagen) {
        int aantal = 0;
        @@COMMENT@@
        for (LocalDate dag = van; dag.isBefore(tot); dag = dag.plusDays(1)) {
            DayOfWeek weekdag = dag.getDayOfWeek();
            boolean weekend = weekdag == DayOfWeek.SATURDAY || weekdag == DayOfWeek.SUNDAY;
            if (!weekend && !feestdagen.contains(dag)) {
                aantal++;
            }
        }
        return aantal;
    }
}
""",
        comment="Het interval is halfopen: van telt mee, tot niet. Zaterdagen, zondagen en dagen uit feestdagen "
        "worden niet als werkdag geteld.",
        paraphrase="Het interval is inclusief van en exclusief tot; weekenddagen en alle datums in feestdagen "
        "slaan we over bij het tellen van werkdagen.",
        wrong_identifier="Het interval is halfopen: van telt mee, tot niet. Zaterdagen, zondagen en dagen uit "
        "weekend worden niet als werkdag geteld.",
        missing_detail="Het interval is halfopen: van telt mee, tot niet.",
        wrong_statement="Het interval is gesloten: zowel van als tot tellen mee. Alleen zondagen en feestdagen "
        "worden overgeslagen, want zaterdagen gelden hier als werkdag.",
        wrong_language="Het interval is half open: the start date is counted but the end date is not. Saturdays, "
        "Sundays and the dates in feestdagen are not counted as working days.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package nl.voorbeeld.tekst;

public final class Palindroom {

    private Palindroom() {
    }

    @@COMMENT@@
    public static boolean isPalindroom(String zin) {
        int links = 0;
        int rechts = zin.length() - 1;
        while (links < rechts) {
            char a = zin.charAt(links);
            char b = zin.charAt(rechts);
            if (!Character.isLetterOrDigit(a)) {
                links++;
            } else if (!Character.isLetterOrDigit(b)) {
                rechts--;
            } else if (Character.toLowerCase(a) != Character.toLowerCase(b)) {
                return false;
            } else {
                links++;
                rechts--;
            }
        }
        return true;
    }
}
""",
        comment="Bepaalt of zin een palindroom is, waarbij hoofdletters, spaties en leestekens genegeerd worden. "
        "Werkt met de indexen links en rechts vanaf beide kanten, zonder een nieuwe string te maken.",
        paraphrase="Bepaalt of zin van voor naar achter hetzelfde leest als andersom, zonder te letten op "
        "hoofdletters of tekens die geen letter of cijfer zijn; er wordt geen kopie van de tekst gemaakt.",
        wrong_identifier="Bepaalt of zin een palindroom is, waarbij hoofdletters, spaties en leestekens genegeerd "
        "worden. Werkt met de indexen a en b vanaf beide kanten, zonder een nieuwe string te maken.",
        missing_detail="Bepaalt of zin een palindroom is. Werkt met de indexen links en rechts vanaf beide kanten.",
        wrong_statement="Bepaalt of zin een palindroom is; hoofdletters en leestekens tellen mee, dus Lepel is geen "
        "palindroom. Draait eerst de hele string om en vergelijkt die met het origineel.",
        wrong_language="Bepaalt of zin is a palindrome, ignoring case, spaces and punctuation. It walks the "
        "indexes links and rechts in from both ends without building a new string.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import re
from collections import Counter

_WOORD = re.compile(r"[^\\W\\d_]+(?:'[^\\W\\d_]+)?")
STOPWOORDEN = frozenset({"de", "het", "een", "en", "van", "in", "op", "te", "dat", "die"})


def meest_voorkomend(tekst: str, n: int = 10) -> list[tuple[str, int]]:
    @@COMMENT@@
    woorden = (woord.lower() for woord in _WOORD.findall(tekst))
    telling = Counter(woord for woord in woorden if woord not in STOPWOORDEN)
    return telling.most_common(n)
""",
        comment="Alleen letters tellen als woord in _WOORD, zodat cijfers en underscores wegvallen; een apostrof "
        "binnen een woord blijft behouden, zodat zo'n en auto's één woord blijven.",
        paraphrase="Alleen letters tellen mee voor een woord, cijfers en underscores niet; woorden met een "
        "apostrof erin, zoals zo'n of auto's, worden als geheel geteld.",
        wrong_identifier="Alleen letters tellen als woord in STOPWOORDEN, zodat cijfers en underscores wegvallen; "
        "een apostrof binnen een woord blijft behouden, zodat zo'n en auto's één woord blijven.",
        missing_detail="Alleen letters tellen als woord in _WOORD, zodat cijfers en underscores wegvallen.",
        wrong_statement="Alleen letters tellen als woord in _WOORD; een apostrof splitst het woord, dus auto's "
        "telt als auto en s, en hoofdletters blijven behouden.",
        wrong_language="Alleen letters tellen as word characters in _WOORD, so digits and underscores are dropped; "
        "an apostrophe inside a word is kept, so words like zo'n and auto's stay in one piece.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections.abc import Iterable, Iterator


def plat(waarden: Iterable[object]) -> Iterator[object]:
    # Een expliciete stapel in plaats van recursie: diep geneste lijsten geven zo geen RecursionError.
    stapel = [iter(waarden)]
    while stapel:
        try:
            waarde = next(stapel[-1])
        except StopIteration:
            stapel.pop()
            continue
        @@COMMENT@@
        if isinstance(waarde, Iterable) and not isinstance(waarde, (str, bytes)):
            stapel.append(iter(waarde))
        else:
            yield waarde
""",
        comment="Strings en bytes zijn ook iterabel, maar die leveren we als één waarde op in plaats van ze op "
        "stapel te zetten; anders kwam elk teken apart terug en liep een string van één teken eindeloos door.",
        paraphrase="Strings en bytes behandelen we als losse waarden, ook al zijn ze iterabel: anders kwam elk "
        "teken afzonderlijk terug, en een string van één letter zou nooit eindigen.",
        wrong_identifier="Strings en bytes zijn ook iterabel, maar die leveren we als één waarde op in plaats van "
        "ze op waarden te zetten; anders kwam elk teken apart terug en liep een string van één teken eindeloos "
        "door.",
        missing_detail="Strings en bytes zijn ook iterabel, maar die leveren we als één waarde op in plaats van ze "
        "op stapel te zetten.",
        wrong_statement="Strings en bytes worden hier teken voor teken opgeleverd, net als lijsten; alleen "
        "dictionaries worden als één waarde behandeld.",
        wrong_language="Strings en bytes are iterable too, but we yield them as a single value instead of pushing "
        "them onto stapel; otherwise every character would come back on its own.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import os
import tempfile
from pathlib import Path


def schrijf_atomair(pad: Path, inhoud: str) -> None:
    fd, tijdelijk = tempfile.mkstemp(dir=pad.parent, prefix=f".{pad.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as bestand:
            bestand.write(inhoud)
            # fsync vóór de rename: anders kan na een stroomstoring een leeg bestand overblijven.
            bestand.flush()
            os.fsync(bestand.fileno())
        @@COMMENT@@
        os.replace(tijdelijk, pad)
    except BaseException:
        os.unlink(tijdelijk)
        raise
""",
        comment="os.replace is atomair binnen hetzelfde bestandssysteem; daarom staat het tijdelijke bestand in "
        "dezelfde map als pad. Lezers zien dus de oude of de nieuwe inhoud, nooit een mengsel.",
        paraphrase="os.replace is atomair zolang bron en doel op hetzelfde bestandssysteem staan, vandaar het "
        "tijdelijke bestand naast pad; een lezer ziet altijd óf de oude óf de nieuwe versie.",
        wrong_identifier="os.replace is atomair binnen hetzelfde bestandssysteem; daarom staat het tijdelijke "
        "bestand in dezelfde map als bestand. Lezers zien dus de oude of de nieuwe inhoud, nooit een mengsel.",
        missing_detail="os.replace is atomair en lezers zien dus de oude of de nieuwe inhoud, nooit een mengsel.",
        wrong_statement="os.replace is atomair op elk bestandssysteem, ook tussen verschillende schijven; als pad "
        "al bestaat, volgt een FileExistsError.",
        wrong_language="os.replace is atomair only within one file system, which is why the temporary file lives "
        "in the same directory as pad. Readers see either the old or the new content, never a mix.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


@@COMMENT@@
def in_blokken(items: Iterable[T], grootte: int) -> Iterator[list[T]]:
    if grootte < 1:
        raise ValueError(f"grootte moet minstens 1 zijn, niet {grootte}")
    bron = iter(items)
    while blok := list(islice(bron, grootte)):
        yield blok
""",
        comment="Deelt items op in lijsten van grootte elementen; het laatste blok mag korter zijn. Werkt ook met "
        "generators, omdat er nooit meer dan één blok tegelijk in het geheugen staat.",
        paraphrase="Deelt items op in opeenvolgende lijsten van hooguit grootte elementen, waarbij alleen het "
        "laatste blok kleiner kan zijn; geschikt voor generators, want er wordt steeds maar één blok opgebouwd.",
        wrong_identifier="Deelt items op in lijsten van bron elementen; het laatste blok mag korter zijn. Werkt ook "
        "met generators, omdat er nooit meer dan één blok tegelijk in het geheugen staat.",
        missing_detail="Deelt items op in lijsten van grootte elementen.",
        wrong_statement="Deelt items op in lijsten van grootte elementen en vult het laatste blok aan met None; de "
        "invoer wordt eerst volledig in een lijst ingelezen.",
        wrong_language="Deelt items op into lists of grootte elements; the last chunk may be shorter. It also works "
        "with generators, since only one chunk is held in memory at a time.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from datetime import date

# Nederlandse maandnamen; afkortingen als mrt en okt worden nog niet ondersteund.
MAANDEN = {
    "januari": 1, "februari": 2, "maart": 3, "april": 4, "mei": 5, "juni": 6,
    "juli": 7, "augustus": 8, "september": 9, "oktober": 10, "november": 11, "december": 12,
}


def lees_datum(tekst: str) -> date:
    delen = tekst.strip().lower().split()
    @@COMMENT@@
    if len(delen) == 4:
        delen = delen[1:]
    if len(delen) != 3 or delen[1] not in MAANDEN:
        raise ValueError(f"onbekende datum: {tekst!r}")
    dag, maand, jaar = int(delen[0]), MAANDEN[delen[1]], int(delen[2])
    return date(jaar, maand, dag)
""",
        comment="Een datum als maandag 3 maart 2025 heeft vier delen; de weekdag controleren we niet en laten we "
        "uit delen vallen, dus ook een verkeerde weekdag wordt geaccepteerd.",
        paraphrase="Een datum als dinsdag 4 juni 2024 begint met de naam van de dag; die wordt weggelaten zonder "
        "te kijken of hij wel bij de datum past.",
        wrong_identifier="Een datum als maandag 3 maart 2025 heeft vier delen; de weekdag controleren we niet en "
        "laten we uit MAANDEN vallen, dus ook een verkeerde weekdag wordt geaccepteerd.",
        missing_detail="Een datum als maandag 3 maart 2025 heeft vier delen; de weekdag laten we uit delen vallen.",
        wrong_statement="Een datum als maandag 3 maart 2025 heeft vier delen; de weekdag wordt gecontroleerd en bij "
        "een verkeerde weekdag volgt een ValueError.",
        wrong_language="Een datum als Monday 3 March 2025 has four parts; the weekday is not checked but simply "
        "dropped from delen, so a wrong weekday is accepted as well.",
    ),
)
