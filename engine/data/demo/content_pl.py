"""Demo files with Polish comments (hand-written for babelscore; see DATA_CARD.md)."""
from __future__ import annotations

from engine.data.demo.spec import DemoFile

LANGUAGE = "pl"

FILES = (
    DemoFile(
        program="java",
        style="javadoc",
        source=r"""package pl.przyklad.walidacja;

public final class Pesel {

    private static final int[] WAGI = {1, 3, 7, 9, 1, 3, 7, 9, 1, 3};

    private Pesel() {
    }

    @@COMMENT@@
    public static boolean czyPoprawny(String pesel) {
        if (pesel == null || !pesel.matches("\\d{11}")) {
            return false;
        }
        int suma = 0;
        for (int i = 0; i < WAGI.length; i++) {
            suma += WAGI[i] * (pesel.charAt(i) - '0');
        }
        int kontrolna = (10 - suma % 10) % 10;
        return kontrolna == pesel.charAt(10) - '0';
    }
}
""",
        comment="Sprawdza, czy numer PESEL ma jedenaście cyfr i poprawną cyfrę kontrolną liczoną z wagami WAGI. Nie "
        "weryfikuje daty urodzenia zakodowanej w pierwszych sześciu cyfrach.",
        paraphrase="Sprawdza, czy numer PESEL składa się z 11 cyfr i czy zgadza się jego cyfra kontrolna wyliczona "
        "z wagami WAGI; data urodzenia z sześciu pierwszych cyfr nie jest sprawdzana.",
        wrong_identifier="Sprawdza, czy numer PESEL ma jedenaście cyfr i poprawną cyfrę kontrolną liczoną z wagami "
        "kontrolna. Nie weryfikuje daty urodzenia zakodowanej w pierwszych sześciu cyfrach.",
        missing_detail="Sprawdza, czy numer PESEL ma jedenaście cyfr.",
        wrong_statement="Sprawdza, czy numer PESEL ma jedenaście cyfr, poprawną cyfrę kontrolną i prawidłową datę "
        "urodzenia; dla null rzuca NullPointerException.",
        wrong_language="Sprawdza, czy numer PESEL has eleven digits and a valid check digit computed with the "
        "weights in WAGI. It does not verify the birth date encoded in the first six digits.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package pl.przyklad.grafy;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;

public class Dwudzielnosc {

    public static boolean czyDwudzielny(List<List<Integer>> sasiedzi) {
        int[] kolor = new int[sasiedzi.size()];
        Arrays.fill(kolor, -1);
        @@COMMENT@@
        for (int start = 0; start < sasiedzi.size(); start++) {
            if (kolor[start] != -1) {
                continue;
            }
            kolor[start] = 0;
            Queue<Integer> kolejka = new ArrayDeque<>();
            kolejka.add(start);
            while (!kolejka.isEmpty()) {
                int v = kolejka.poll();
                for (int u : sasiedzi.get(v)) {
                    if (kolor[u] == -1) {
                        kolor[u] = 1 - kolor[v];
                        kolejka.add(u);
                    } else if (kolor[u] == kolor[v]) {
                        return false;
                    }
                }
            }
        }
        return true;
    }
}
""",
        comment="Graf może być niespójny, więc BFS startujemy z każdego wierzchołka, którego kolor to wciąż -1. "
        "Sąsiad u dostaje przeciwny kolor; ten sam kolor po obu stronach krawędzi oznacza nieparzysty cykl.",
        paraphrase="Graf może być złożony z kilku składowych, dlatego przeszukiwanie wszerz uruchamiamy od każdego "
        "wierzchołka bez koloru. Sąsiad dostaje kolor odwrotny, a konflikt kolorów świadczy o cyklu nieparzystej "
        "długości.",
        wrong_identifier="Graf może być niespójny, więc BFS startujemy z każdego wierzchołka, którego kolor to wciąż "
        "-1. Sąsiad v dostaje przeciwny kolor; ten sam kolor po obu stronach krawędzi oznacza nieparzysty cykl.",
        missing_detail="Graf może być niespójny, więc BFS startujemy z każdego wierzchołka, którego kolor to wciąż "
        "-1.",
        wrong_statement="Graf może być niespójny, ale wystarczy jedno przeszukiwanie z wierzchołka 0; ten sam kolor "
        "po obu stronach krawędzi oznacza cykl parzystej długości.",
        wrong_language="Graf może być disconnected, so BFS starts from every vertex whose colour is still -1. The "
        "neighbour u gets the opposite colour; the same colour on both ends of an edge means an odd cycle.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source=r"""package pl.przyklad.pliki;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

public final class LicznikLinii {

    private LicznikLinii() {
    }

    @@COMMENT@@
    public static long policz(Path plik) throws IOException {
        long linie = 0;
        int ostatni = '\n';
        byte[] bufor = new byte[8192];
        try (InputStream wejscie = Files.newInputStream(plik)) {
            int n;
            while ((n = wejscie.read(bufor)) != -1) {
                for (int i = 0; i < n; i++) {
                    if (bufor[i] == '\n') {
                        linie++;
                    }
                }
                if (n > 0) {
                    ostatni = bufor[n - 1];
                }
            }
        }
        // Ostatnia linia bez znaku nowej linii na końcu też się liczy.
        return ostatni == '\n' ? linie : linie + 1;
    }
}
""",
        comment=r"Liczy linie w pliku, czytając surowe bajty do tablicy bufor zamiast dekodować tekst, więc jest "
        r"szybka także dla dużych plików. Szuka tylko \n, więc końce \r\n liczą się poprawnie, a sam \r nie.",
        paraphrase=r"Liczy linie w pliku na poziomie bajtów, bez dekodowania znaków, co przyspiesza pracę z dużymi "
        r"plikami. Szuka wyłącznie \n, więc końce \r\n są w porządku, ale pliki z samym \r dadzą złą liczbę.",
        wrong_identifier=r"Liczy linie w pliku, czytając surowe bajty do tablicy linie zamiast dekodować tekst, więc "
        r"jest szybka także dla dużych plików. Szuka tylko \n, więc końce \r\n liczą się poprawnie, a sam \r nie.",
        missing_detail="Liczy linie w pliku, czytając surowe bajty do tablicy bufor zamiast dekodować tekst.",
        wrong_statement=r"Liczy linie w pliku, wczytując cały plik do pamięci jako String w UTF-8; znak \r też jest "
        "traktowany jako koniec linii.",
        wrong_language=r"Liczy linie w the file by reading raw bytes into the bufor array instead of decoding text, "
        r"so it stays fast for large files. It only looks for \n, so \r\n endings count correctly but a lone \r "
        "does not.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package pl.przyklad.wspolbieznosc;

import java.util.ArrayDeque;
import java.util.Deque;

public class OgraniczonaKolejka<T> {

    private final Deque<T> elementy = new ArrayDeque<>();
    private final int pojemnosc;

    public OgraniczonaKolejka(int pojemnosc) {
        this.pojemnosc = pojemnosc;
    }

    @@COMMENT@@
    public synchronized void wstaw(T element) throws InterruptedException {
        while (elementy.size() == pojemnosc) {
            wait();
        }
        elementy.addLast(element);
        notifyAll();
    }

    public synchronized T pobierz() throws InterruptedException {
        // Pętla, a nie if: wait() może się obudzić bez powodu (spurious wakeup).
        while (elementy.isEmpty()) {
            wait();
        }
        T element = elementy.removeFirst();
        notifyAll();
        return element;
    }
}
""",
        comment="Dodaje element na koniec kolejki; gdy kolejka ma już pojemnosc elementów, blokuje wątek do czasu "
        "zwolnienia miejsca. Używa notifyAll zamiast notify, bo na tym samym monitorze czekają producenci i "
        "konsumenci.",
        paraphrase="Dodaje element na końcu kolejki, a jeśli jest ona pełna, czeka, aż ktoś coś pobierze. Budzimy "
        "wszystkich przez notifyAll, ponieważ producenci i konsumenci czekają na tym samym monitorze.",
        wrong_identifier="Dodaje element na koniec kolejki; gdy kolejka ma już pojemnosc elementów, blokuje wątek do "
        "czasu zwolnienia miejsca. Używa wait zamiast notify, bo na tym samym monitorze czekają producenci i "
        "konsumenci.",
        missing_detail="Dodaje element na koniec kolejki; gdy kolejka jest pełna, blokuje wątek.",
        wrong_statement="Dodaje element na koniec kolejki; gdy kolejka jest pełna, najstarszy element jest usuwany, "
        "więc metoda nigdy nie blokuje wątku.",
        wrong_language="Dodaje element na the end of the queue; when it already holds pojemnosc elements, the "
        "thread blocks until space is freed. It uses notifyAll rather than notify because producers and "
        "consumers wait on the same monitor.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package pl.przyklad.format;

import java.util.Locale;

public final class Rozmiar {

    private static final String[] JEDNOSTKI = {"B", "KiB", "MiB", "GiB", "TiB"};
    private static final Locale POLSKI = Locale.forLanguageTag("pl-PL");

    private Rozmiar() {
    }

    public static String czytelny(long bajty) {
        if (bajty < 1024) {
            return bajty + " B";
        }
        @@COMMENT@@
        int wykladnik = Math.min((63 - Long.numberOfLeadingZeros(bajty)) / 10, JEDNOSTKI.length - 1);
        double wartosc = bajty / Math.pow(1024, wykladnik);
        // Polski format liczb: przecinek dziesiętny, np. 1,5 MiB.
        return String.format(POLSKI, "%.1f %s", wartosc, JEDNOSTKI[wykladnik]);
    }
}
""",
        comment="Wykładnik potęgi 1024 wyznaczamy z pozycji najstarszego ustawionego bitu, bez logarytmów i błędów "
        "zaokrągleń. Ograniczamy go do ostatniego indeksu JEDNOSTKI, więc większe rozmiary pokazujemy w TiB.",
        paraphrase="Wykładnik potęgi 1024 liczymy z numeru najwyższego bitu równego 1 zamiast z logarytmu, co omija "
        "problemy z zaokrąglaniem; powyżej TiB nie ma już jednostek, więc zostajemy przy TiB.",
        wrong_identifier="Wykładnik potęgi 1024 wyznaczamy z pozycji najstarszego ustawionego bitu, bez logarytmów i "
        "błędów zaokrągleń. Ograniczamy go do ostatniego indeksu wartosc, więc większe rozmiary pokazujemy w TiB.",
        missing_detail="Wykładnik potęgi 1024 wyznaczamy z pozycji najstarszego ustawionego bitu.",
        wrong_statement="Wykładnik potęgi 1024 wyznaczamy z logarytmu dziesiętnego; dla rozmiarów powyżej TiB metoda "
        "rzuca ArrayIndexOutOfBoundsException.",
        wrong_language="Wykładnik potęgi 1024 is derived from the position of the highest set bit, with no "
        "logarithms and no rounding errors. It is capped at the last index of JEDNOSTKI, so larger sizes are "
        "shown in TiB.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package pl.przyklad.daty;

public final class Kalendarz {

    private Kalendarz() {
    }

    @@COMMENT@@
    public static boolean czyPrzestepny(int rok) {
        return (rok % 4 == 0 && rok % 100 != 0) || rok % 400 == 0;
    }

    public static int dniWMiesiacu(int rok, int miesiac) {
        return switch (miesiac) {
            case 2 -> czyPrzestepny(rok) ? 29 : 28;
            case 4, 6, 9, 11 -> 30;
            default -> 31;
        };
    }
}
""",
        comment="Zwraca true, gdy rok jest przestępny w kalendarzu gregoriańskim: podzielny przez 4, ale nie przez "
        "100, chyba że dzieli się przez 400. Dlatego 2000 był przestępny, a 1900 nie.",
        paraphrase="Zwraca true, gdy rok ma 366 dni według reguł gregoriańskich: co cztery lata, z wyjątkiem pełnych "
        "stuleci niepodzielnych przez 400, więc 2000 był przestępny, a 1900 nie.",
        wrong_identifier="Zwraca true, gdy miesiac jest przestępny w kalendarzu gregoriańskim: podzielny przez 4, ale "
        "nie przez 100, chyba że dzieli się przez 400. Dlatego 2000 był przestępny, a 1900 nie.",
        missing_detail="Zwraca true, gdy rok jest przestępny, czyli podzielny przez 4.",
        wrong_statement="Zwraca true, gdy rok jest przestępny, czyli podzielny przez 4 lub przez 100; dlatego 1900 "
        "był przestępny, a 2000 nie.",
        wrong_language="Zwraca true, gdy the year is a leap year in the Gregorian calendar: divisible by 4 but not "
        "by 100, unless it is divisible by 400. That is why 2000 was a leap year and 1900 was not.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import re

_BIALE_ZNAKI = re.compile(r"\\s+")


def normalizuj_odstepy(tekst: str) -> str:
    @@COMMENT@@
    tekst = tekst.replace("\\u200b", "")
    return _BIALE_ZNAKI.sub(" ", tekst).strip()
""",
        comment="Spacja o zerowej szerokości (U+200B) nie pasuje do wzorca _BIALE_ZNAKI, dlatego usuwamy ją "
        "osobno; pozostałe odstępy, także niełamiące, zamieniamy na pojedynczą spację.",
        paraphrase=r"Spacja o zerowej szerokości nie jest dla \s białym znakiem, więc trzeba ją wyciąć ręcznie; "
        "wszystkie inne ciągi odstępów, łącznie z twardą spacją, stają się jedną spacją.",
        wrong_identifier="Spacja o zerowej szerokości (U+200B) nie pasuje do wzorca normalizuj_odstepy, dlatego "
        "usuwamy ją osobno; pozostałe odstępy, także niełamiące, zamieniamy na pojedynczą spację.",
        missing_detail="Spacja o zerowej szerokości (U+200B) nie pasuje do wzorca _BIALE_ZNAKI, dlatego usuwamy ją "
        "osobno.",
        wrong_statement=r"Spacja o zerowej szerokości (U+200B) jest zamieniana na zwykłą spację, a spacje "
        r"niełamiące zostają bez zmian, bo nie pasują do \s.",
        wrong_language="Spacja o zerowej width (U+200B) does not match the _BIALE_ZNAKI pattern, so we remove it "
        "separately; all other whitespace, non-breaking spaces included, becomes a single space.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections import deque

KIERUNKI = ((1, 0), (-1, 0), (0, 1), (0, -1))


def najkrotsza_droga(labirynt: list[str], start: tuple[int, int], cel: tuple[int, int]) -> int | None:
    wiersze, kolumny = len(labirynt), len(labirynt[0])
    odleglosc = {start: 0}
    kolejka = deque([start])
    while kolejka:
        w, k = kolejka.popleft()
        if (w, k) == cel:
            return odleglosc[(w, k)]
        for dw, dk in KIERUNKI:
            nw, nk = w + dw, k + dk
            @@COMMENT@@
            if (
                0 <= nw < wiersze
                and 0 <= nk < kolumny
                and labirynt[nw][nk] != "#"
                and (nw, nk) not in odleglosc
            ):
                odleglosc[(nw, nk)] = odleglosc[(w, k)] + 1
                kolejka.append((nw, nk))
    return None
""",
        comment="Pole jest dostępne, jeśli leży w granicach planszy, nie jest ścianą # i nie ma go jeszcze w "
        "odleglosc; słownik służy jednocześnie za zbiór odwiedzonych pól.",
        paraphrase="Pole jest dostępne, gdy mieści się na planszy, nie zawiera znaku # i nie zostało jeszcze "
        "odwiedzone; odleglosc pełni przy okazji rolę zbioru odwiedzonych pól.",
        wrong_identifier="Pole jest dostępne, jeśli leży w granicach planszy, nie jest ścianą # i nie ma go jeszcze w "
        "kolejka; słownik służy jednocześnie za zbiór odwiedzonych pól.",
        missing_detail="Pole jest dostępne, jeśli leży w granicach planszy i nie jest ścianą #.",
        wrong_statement="Pole jest dostępne, jeśli leży w granicach planszy; przez ściany # można przechodzić po "
        "przekątnej, a odwiedzone pola dodajemy do kolejki ponownie.",
        wrong_language="Pole jest dostępne, if it lies inside the board, is not a # wall and is not yet in "
        "odleglosc; the dictionary doubles as the set of visited cells.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import copy
import json
from pathlib import Path
from typing import Any

# Wartości domyślne; plik JSON musi podać tylko to, co chce zmienić.
DOMYSLNE: dict[str, Any] = {"port": 8080, "debug": False, "baza": {"host": "localhost", "port": 5432}}


def scal(podstawa: dict[str, Any], nadpisania: dict[str, Any]) -> dict[str, Any]:
    wynik = copy.deepcopy(podstawa)
    for klucz, wartosc in nadpisania.items():
        @@COMMENT@@
        if isinstance(wartosc, dict) and isinstance(wynik.get(klucz), dict):
            wynik[klucz] = scal(wynik[klucz], wartosc)
        else:
            wynik[klucz] = wartosc
    return wynik


def wczytaj_konfiguracje(sciezka: Path) -> dict[str, Any]:
    if not sciezka.exists():
        return copy.deepcopy(DOMYSLNE)
    return scal(DOMYSLNE, json.loads(sciezka.read_text(encoding="utf-8")))
""",
        comment="Słowniki scalamy rekurencyjnie, więc plik może nadpisać samo baza.port i zachować domyślny host; "
        "każda inna wartość z nadpisania, także lista, zastępuje domyślną w całości.",
        paraphrase="Słowniki scalamy rekurencyjnie, dzięki czemu wystarczy podać w pliku samo baza.port, a host "
        "zostanie domyślny; wartości innych typów, na przykład listy, zastępują domyślne w całości.",
        wrong_identifier="Słowniki scalamy rekurencyjnie, więc plik może nadpisać samo baza.port i zachować domyślny "
        "host; każda inna wartość z podstawa, także lista, zastępuje domyślną w całości.",
        missing_detail="Słowniki scalamy rekurencyjnie, więc plik może nadpisać samo baza.port i zachować domyślny "
        "host.",
        wrong_statement="Słowniki scalamy rekurencyjnie, a listy są łączone element po elemencie; jeśli plik poda "
        "baza.port, domyślny host zostaje usunięty.",
        wrong_language="Słowniki scalamy rekurencyjnie, so the file can override just baza.port and keep the "
        "default host; any other value from nadpisania, lists included, replaces the default entirely.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


def ponawiaj(
    proby: int = 3, odstep: float = 0.5, wyjatki: tuple[type[BaseException], ...] = (ConnectionError,)
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def dekorator(funkcja: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(funkcja)
        def opakowanie(*args: Any, **kwargs: Any) -> Any:
            for proba in range(1, proby + 1):
                try:
                    return funkcja(*args, **kwargs)
                except wyjatki as blad:
                    @@COMMENT@@
                    if proba == proby:
                        raise
                    logger.warning("próba %d/%d nieudana: %s", proba, proby, blad)
                    time.sleep(odstep * proba)

        return opakowanie

    return dekorator
""",
        comment="Po ostatniej próbie rzucamy dalej oryginalny wyjątek, a nie własny, żeby wywołujący widział "
        "prawdziwą przyczynę. Przerwa rośnie liniowo: odstep, 2 * odstep, 3 * odstep.",
        paraphrase="Po ostatniej próbie przepuszczamy pierwotny wyjątek bez opakowywania, aby było widać, co "
        "naprawdę poszło źle. Czas oczekiwania rośnie liniowo z numerem próby: odstep razy proba.",
        wrong_identifier="Po ostatniej próbie rzucamy dalej oryginalny wyjątek, a nie własny, żeby wywołujący widział "
        "prawdziwą przyczynę. Przerwa rośnie liniowo: proby, 2 * proby, 3 * proby.",
        missing_detail="Po ostatniej próbie rzucamy dalej oryginalny wyjątek.",
        wrong_statement="Po ostatniej próbie zwracamy None zamiast rzucać wyjątek. Przerwa rośnie wykładniczo i jest "
        "podwajana po każdej próbie.",
        wrong_language="Po ostatniej próbie we re-raise the original exception rather than our own, so the caller "
        "sees the real cause. The pause grows linearly: odstep, 2 * odstep, 3 * odstep.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from datetime import date, timedelta


def poczatek_tygodnia_iso(rok: int, tydzien: int) -> date:
    @@COMMENT@@
    czwarty_stycznia = date(rok, 1, 4)
    poniedzialek_pierwszego = czwarty_stycznia - timedelta(days=czwarty_stycznia.weekday())
    return poniedzialek_pierwszego + timedelta(weeks=tydzien - 1)
""",
        comment="Według ISO 8601 pierwszy tydzień roku to ten, który zawiera 4 stycznia, więc cofamy się od "
        "czwarty_stycznia do poniedziałku. Taki poniedziałek może wypaść jeszcze w grudniu poprzedniego roku.",
        paraphrase="Według ISO 8601 tydzień numer 1 to tydzień z 4 stycznia; szukamy jego poniedziałku, który "
        "czasem należy jeszcze do grudnia roku wcześniejszego.",
        wrong_identifier="Według ISO 8601 pierwszy tydzień roku to ten, który zawiera 4 stycznia, więc cofamy się od "
        "tydzien do poniedziałku. Taki poniedziałek może wypaść jeszcze w grudniu poprzedniego roku.",
        missing_detail="Według ISO 8601 pierwszy tydzień roku to ten, który zawiera 4 stycznia.",
        wrong_statement="Według ISO 8601 pierwszy tydzień roku zaczyna się zawsze 1 stycznia, niezależnie od dnia "
        "tygodnia, więc wynik nigdy nie wypada w grudniu.",
        wrong_language="Według ISO 8601 the first week of the year is the one that contains 4 January, so we step "
        "back from czwarty_stycznia to its Monday, which may still fall in December of the previous year.",
    ),
)
