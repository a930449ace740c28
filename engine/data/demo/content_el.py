"""Demo files with Greek comments (hand-written for babelscore; see DATA_CARD.md)."""
from __future__ import annotations

from engine.data.demo.spec import DemoFile

LANGUAGE = "el"

FILES = (
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package gr.paradeigma.keimeno;

import java.util.Locale;

public final class Keimeno {

    private static final Locale ELLINIKA = Locale.forLanguageTag("el-GR");

    private Keimeno() {
    }

    @@COMMENT@@
    public static String kefalaiaLexeon(String protasi) {
        // Πεζά σε όλη τη συμβολοσειρά μαζί, ώστε το τελικό σίγμα να γίνει ς και όχι σ.
        char[] grammata = protasi.toLowerCase(ELLINIKA).toCharArray();
        boolean archiLexis = true;
        for (int i = 0; i < grammata.length; i++) {
            if (Character.isWhitespace(grammata[i])) {
                archiLexis = true;
            } else if (archiLexis) {
                grammata[i] = Character.toTitleCase(grammata[i]);
                archiLexis = false;
            }
        }
        return new String(grammata);
    }
}
""",
        comment="Επιστρέφει την πρόταση με το πρώτο γράμμα κάθε λέξης κεφαλαίο και τα υπόλοιπα πεζά, σύμφωνα με "
        "το Locale ELLINIKA. Λέξεις θεωρούνται τα τμήματα ανάμεσα σε κενούς χαρακτήρες.",
        paraphrase="Επιστρέφει την πρόταση έτσι ώστε κάθε λέξη να ξεκινά με κεφαλαίο γράμμα και να συνεχίζει με "
        "πεζά, με βάση το ELLINIKA· ως όρια λέξεων μετρούν μόνο οι κενοί χαρακτήρες.",
        wrong_identifier="Επιστρέφει την πρόταση με το πρώτο γράμμα κάθε λέξης κεφαλαίο και τα υπόλοιπα πεζά, "
        "σύμφωνα με το Locale archiLexis. Λέξεις θεωρούνται τα τμήματα ανάμεσα σε κενούς χαρακτήρες.",
        missing_detail="Επιστρέφει την πρόταση με το πρώτο γράμμα κάθε λέξης κεφαλαίο.",
        wrong_statement="Επιστρέφει την πρόταση ολόκληρη με κεφαλαία γράμματα και χωρίς τόνους· τα κενά ανάμεσα "
        "στις λέξεις αφαιρούνται.",
        wrong_language="Επιστρέφει την πρόταση with the first letter of every word in upper case and the rest in "
        "lower case, using the ELLINIKA locale. Words are the runs between whitespace characters.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package gr.paradeigma.grafoi;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

public class Synistoses {

    public static int plithos(List<List<Integer>> geitones) {
        int n = geitones.size();
        boolean[] episkeftikan = new boolean[n];
        int synistoses = 0;
        for (int arxi = 0; arxi < n; arxi++) {
            if (episkeftikan[arxi]) {
                continue;
            }
            synistoses++;
            @@COMMENT@@
            Deque<Integer> stoiva = new ArrayDeque<>();
            stoiva.push(arxi);
            episkeftikan[arxi] = true;
            while (!stoiva.isEmpty()) {
                int kombos = stoiva.pop();
                for (int geitonas : geitones.get(kombos)) {
                    if (!episkeftikan[geitonas]) {
                        episkeftikan[geitonas] = true;
                        stoiva.push(geitonas);
                    }
                }
            }
        }
        return synistoses;
    }
}
""",
        comment="Επαναληπτική αναζήτηση κατά βάθος με δική μας στοίβα αντί για αναδρομή, για να μην έχουμε "
        "StackOverflowError σε μεγάλους γράφους. Ο κόμβος σημειώνεται στο episkeftikan όταν μπαίνει στη στοίβα, "
        "όχι όταν βγαίνει.",
        paraphrase="Επαναληπτική αναζήτηση κατά βάθος: χρησιμοποιούμε ρητή στοίβα και όχι αναδρομή, ώστε οι πολύ "
        "μεγάλοι γράφοι να μη γεμίζουν τη στοίβα κλήσεων. Κάθε κόμβος μαρκάρεται τη στιγμή που προστίθεται.",
        wrong_identifier="Επαναληπτική αναζήτηση κατά βάθος με δική μας στοίβα αντί για αναδρομή, για να μην έχουμε "
        "StackOverflowError σε μεγάλους γράφους. Ο κόμβος σημειώνεται στο geitones όταν μπαίνει στη στοίβα, όχι "
        "όταν βγαίνει.",
        missing_detail="Επαναληπτική αναζήτηση κατά βάθος με δική μας στοίβα αντί για αναδρομή.",
        wrong_statement="Επαναληπτική αναζήτηση κατά πλάτος με ουρά προτεραιότητας· ο κόμβος σημειώνεται στο "
        "episkeftikan μόνο όταν βγει από τη δομή, οπότε μπορεί να μπει πολλές φορές.",
        wrong_language="Επαναληπτική αναζήτηση κατά depth first with an explicit stack instead of recursion, so "
        "large graphs cannot cause a StackOverflowError. A node is marked in episkeftikan when it is pushed, "
        "not when it is popped.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package gr.paradeigma.arxeia;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;

public final class Sympiesi {

    private Sympiesi() {
    }

    @@COMMENT@@
    public static Path sympiese(Path arxeio) throws IOException {
        Path gz = arxeio.resolveSibling(arxeio.getFileName() + ".gz");
        try (InputStream eisodos = Files.newInputStream(arxeio);
             OutputStream exodos = new GZIPOutputStream(Files.newOutputStream(gz))) {
            // Το transferTo έχει δικό του buffer, δεν χρειάζεται να φτιάξουμε εμείς.
            eisodos.transferTo(exodos);
        }
        Files.delete(arxeio);
        return gz;
    }
}
""",
        comment="Συμπιέζει το αρχείο με gzip σε ένα νέο αρχείο με κατάληξη .gz στον ίδιο φάκελο και διαγράφει το "
        "αρχικό. Επιστρέφει τη διαδρομή gz του συμπιεσμένου αρχείου.",
        paraphrase="Συμπιέζει το αρχείο σε μορφή gzip, γράφοντας δίπλα του ένα αρχείο .gz, και στη συνέχεια σβήνει "
        "το πρωτότυπο· η μέθοδος επιστρέφει τη διαδρομή του νέου αρχείου.",
        wrong_identifier="Συμπιέζει το αρχείο με gzip σε ένα νέο αρχείο με κατάληξη .gz στον ίδιο φάκελο και "
        "διαγράφει το αρχικό. Επιστρέφει τη διαδρομή arxeio του συμπιεσμένου αρχείου.",
        missing_detail="Συμπιέζει το αρχείο με gzip σε ένα νέο αρχείο με κατάληξη .gz.",
        wrong_statement="Συμπιέζει το αρχείο με zip και αντικαθιστά το περιεχόμενό του επί τόπου, χωρίς να "
        "δημιουργεί νέο αρχείο· επιστρέφει το μέγεθος σε bytes.",
        wrong_language="Συμπιέζει το αρχείο with gzip into a new file with the .gz extension in the same folder "
        "and deletes the original. Returns the path gz of the compressed file.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package gr.paradeigma.domes;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.NoSuchElementException;

public class StoivaElaxistou {

    private final Deque<Integer> times = new ArrayDeque<>();
    private final Deque<Integer> elaxista = new ArrayDeque<>();

    public void push(int timi) {
        times.push(timi);
        @@COMMENT@@
        if (elaxista.isEmpty() || timi <= elaxista.peek()) {
            elaxista.push(timi);
        }
    }

    public int pop() {
        int timi = times.pop();
        if (timi == elaxista.peek()) {
            elaxista.pop();
        }
        return timi;
    }

    public int elaxisto() {
        if (elaxista.isEmpty()) {
            throw new NoSuchElementException("η στοίβα είναι άδεια");
        }
        return elaxista.peek();
    }
}
""",
        comment="Κρατάμε στη δεύτερη στοίβα elaxista μόνο τιμές μικρότερες ή ίσες με το τρέχον ελάχιστο. Το «ίσες» "
        "χρειάζεται για τα διπλότυπα· χωρίς αυτό, ένα pop θα έχανε το ελάχιστο.",
        paraphrase="Κρατάμε στη δεύτερη στοίβα elaxista μια τιμή μόνο όταν δεν ξεπερνά το τωρινό ελάχιστο. Η "
        "ισότητα μετράει επειδή μπορεί να υπάρχουν ίδιες τιμές, που αλλιώς θα χάνονταν με το pop.",
        wrong_identifier="Κρατάμε στη δεύτερη στοίβα times μόνο τιμές μικρότερες ή ίσες με το τρέχον ελάχιστο. Το "
        "«ίσες» χρειάζεται για τα διπλότυπα· χωρίς αυτό, ένα pop θα έχανε το ελάχιστο.",
        missing_detail="Κρατάμε στη δεύτερη στοίβα elaxista μόνο τιμές μικρότερες ή ίσες με το τρέχον ελάχιστο.",
        wrong_statement="Κρατάμε στη δεύτερη στοίβα elaxista όλες τις τιμές ταξινομημένες, ώστε το pop να επιστρέφει "
        "πάντα το μικρότερο στοιχείο.",
        wrong_language="Κρατάμε στη δεύτερη stack elaxista only values less than or equal to the current minimum. "
        "The equality matters for duplicates; without it a pop would lose the minimum.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package gr.paradeigma.xronos;

public final class Ores {

    private Ores() {
    }

    @@COMMENT@@
    public static int seLepta(String ora) {
        String[] meri = ora.trim().split(":");
        if (meri.length != 2) {
            throw new IllegalArgumentException("Μη έγκυρη ώρα: " + ora);
        }
        int ores = Integer.parseInt(meri[0]);
        int lepta = Integer.parseInt(meri[1]);
        if (ores < 0 || ores > 24 || lepta < 0 || lepta > 59 || (ores == 24 && lepta != 0)) {
            throw new IllegalArgumentException("Μη έγκυρη ώρα: " + ora);
        }
        return ores * 60 + lepta;
    }
}
""",
        comment="Μετατρέπει μια ώρα της μορφής ΩΩ:ΛΛ στα λεπτά από τα μεσάνυχτα, δηλαδή ores * 60 + lepta. Δεκτό "
        "είναι και το 24:00, που σημαίνει το τέλος της ημέρας.",
        paraphrase="Μετατρέπει μια ώρα όπως 08:30 σε αριθμό λεπτών από τα μεσάνυχτα, εδώ 510. Επιτρέπεται επίσης "
        "το 24:00, που συμβολίζει το τέλος της μέρας.",
        wrong_identifier="Μετατρέπει μια ώρα της μορφής ΩΩ:ΛΛ στα λεπτά από τα μεσάνυχτα, δηλαδή ores * 60 + meri. "
        "Δεκτό είναι και το 24:00, που σημαίνει το τέλος της ημέρας.",
        missing_detail="Μετατρέπει μια ώρα της μορφής ΩΩ:ΛΛ στα λεπτά από τα μεσάνυχτα.",
        wrong_statement="Μετατρέπει μια ώρα της μορφής ΩΩ:ΛΛ σε δευτερόλεπτα από τα μεσάνυχτα· το 24:00 "
        "απορρίπτεται, ενώ το 25:00 μετατρέπεται σε 01:00.",
        wrong_language="Μετατρέπει μια ώρα in HH:MM format into minutes since midnight, that is ores * 60 + lepta. "
        "The value 24:00 is accepted as well and stands for the end of the day.",
    ),
    DemoFile(
        program="java",
        style="line",
        source=r"""package gr.paradeigma.elegxos;

import java.util.regex.Pattern;

public final class Email {

    @@COMMENT@@
    private static final Pattern MORFI = Pattern.compile(
            "^[\\p{L}0-9._%+-]+@[\\p{L}0-9-]+(\\.[\\p{L}0-9-]+)*\\.\\p{L}{2,}$");

    private Email() {
    }

    public static boolean exeiEgkyriMorfi(String dieuthinsi) {
        return dieuthinsi != null && dieuthinsi.length() <= 254 && MORFI.matcher(dieuthinsi).matches();
    }
}
""",
        comment=r"Απλός έλεγχος μορφής και όχι πλήρης υλοποίηση του RFC 5322. Το \p{L} δέχεται και ελληνικά "
        "γράμματα, ώστε μια διεύθυνση όπως γιώργος@παράδειγμα.ελ να περνά τον έλεγχο.",
        paraphrase=r"Απλός έλεγχος μορφής που δεν καλύπτει όλο το RFC 5322· χάρη στο \p{L} γίνονται δεκτά και μη "
        "λατινικά γράμματα, για παράδειγμα γιώργος@παράδειγμα.ελ.",
        wrong_identifier="Απλός έλεγχος μορφής και όχι πλήρης υλοποίηση του RFC 5322. Το dieuthinsi δέχεται και "
        "ελληνικά γράμματα, ώστε μια διεύθυνση όπως γιώργος@παράδειγμα.ελ να περνά τον έλεγχο.",
        missing_detail="Απλός έλεγχος μορφής και όχι πλήρης υλοποίηση του RFC 5322.",
        wrong_statement="Απλός έλεγχος μορφής που ακολουθεί πλήρως το RFC 5322· δέχεται μόνο λατινικά γράμματα, άρα "
        "η διεύθυνση γιώργος@παράδειγμα.ελ απορρίπτεται.",
        wrong_language=r"Απλός έλεγχος μορφής only, not a full implementation of RFC 5322. The \p{L} class also "
        "accepts Greek letters, so an address written in the Greek alphabet passes the check.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import unicodedata


def xoris_tonous(keimeno: str) -> str:
    @@COMMENT@@
    anallyto = unicodedata.normalize("NFD", keimeno)
    xoris = "".join(c for c in anallyto if unicodedata.category(c) != "Mn")
    return unicodedata.normalize("NFC", xoris)
""",
        comment="Με την ανάλυση NFD ο τόνος και τα διαλυτικά χωρίζονται από το γράμμα ως χαρακτήρες κατηγορίας Mn, "
        "τους οποίους αφαιρούμε. Στο τέλος το NFC ξαναενώνει ό,τι έμεινε στο xoris.",
        paraphrase="Με την ανάλυση NFD κάθε τονισμένο γράμμα σπάει σε βασικό γράμμα και συνδυαστικό σημάδι "
        "κατηγορίας Mn· κρατάμε μόνο τα βασικά γράμματα και τα επανασυνθέτουμε με NFC.",
        wrong_identifier="Με την ανάλυση NFD ο τόνος και τα διαλυτικά χωρίζονται από το γράμμα ως χαρακτήρες "
        "κατηγορίας Mn, τους οποίους αφαιρούμε. Στο τέλος το NFC ξαναενώνει ό,τι έμεινε στο keimeno.",
        missing_detail="Με την ανάλυση NFD ο τόνος χωρίζεται από το γράμμα και αφαιρείται.",
        wrong_statement="Με την ανάλυση NFD ο τόνος μετατρέπεται σε απόστροφο, ενώ τα διαλυτικά διατηρούνται· "
        "επιπλέον τα κεφαλαία γίνονται πεζά.",
        wrong_language="Με την ανάλυση NFD splits accents and diaeresis off their letters as combining marks of "
        "category Mn, which we drop. NFC then recomposes whatever is left in xoris.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections import deque
from collections.abc import Iterable, Iterator


def kinitos_mesos_oros(times: Iterable[float], parathyro: int) -> Iterator[float]:
    if parathyro <= 0:
        raise ValueError("το parathyro πρέπει να είναι θετικό")
    teleutaies: deque[float] = deque(maxlen=parathyro)
    athroisma = 0.0
    for timi in times:
        @@COMMENT@@
        if len(teleutaies) == parathyro:
            athroisma -= teleutaies[0]
        teleutaies.append(timi)
        athroisma += timi
        yield athroisma / len(teleutaies)
""",
        comment="Το deque με maxlen πετάει μόνο του την παλαιότερη τιμή, γι' αυτό την αφαιρούμε πρώτα από το "
        "athroisma. Στην αρχή ο μέσος όρος βγαίνει από λιγότερες από parathyro τιμές.",
        paraphrase="Το deque με όριο maxlen διώχνει αυτόματα την πιο παλιά τιμή όταν γεμίσει, οπότε πρέπει να τη "
        "βγάλουμε από το athroisma πριν την προσθήκη· τα πρώτα αποτελέσματα βασίζονται σε λιγότερες τιμές.",
        wrong_identifier="Το deque με maxlen πετάει μόνο του την παλαιότερη τιμή, γι' αυτό την αφαιρούμε πρώτα από "
        "το timi. Στην αρχή ο μέσος όρος βγαίνει από λιγότερες από parathyro τιμές.",
        missing_detail="Το deque με maxlen πετάει μόνο του την παλαιότερη τιμή, γι' αυτό την αφαιρούμε πρώτα από το "
        "athroisma.",
        wrong_statement="Το deque με maxlen πετάει σφάλμα όταν γεμίσει, γι' αυτό το αδειάζουμε εντελώς· έτσι ο μέσος "
        "όρος υπολογίζεται πάντα σε ακριβώς parathyro τιμές.",
        wrong_language="Το deque με maxlen drops the oldest value by itself, so we subtract it from athroisma "
        "first. At the start the average is taken over fewer than parathyro values.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from pathlib import Path


def peristrofi_logs(arxeio: Path, megisto_plithos: int = 5) -> None:
    @@COMMENT@@
    palaiotero = arxeio.with_name(f"{arxeio.name}.{megisto_plithos}")
    palaiotero.unlink(missing_ok=True)
    for i in range(megisto_plithos - 1, 0, -1):
        pigi = arxeio.with_name(f"{arxeio.name}.{i}")
        if pigi.exists():
            pigi.rename(arxeio.with_name(f"{arxeio.name}.{i + 1}"))
    if arxeio.exists():
        arxeio.rename(arxeio.with_name(f"{arxeio.name}.1"))
""",
        comment="Πρώτα διαγράφεται το παλαιότερο αρχείο, με κατάληξη megisto_plithos, και μετά μετονομάζουμε από "
        "τον μεγαλύτερο αριθμό προς τον μικρότερο, ώστε το app.log.2 να γίνει app.log.3 πριν πάρει τη θέση του "
        "το app.log.1.",
        paraphrase="Πρώτα διαγράφεται το αρχείο με αριθμό megisto_plithos και έπειτα οι μετονομασίες γίνονται με "
        "φθίνουσα σειρά, για να μη γραφτεί κανένα αρχείο πάνω σε άλλο που δεν έχει μετακινηθεί ακόμα.",
        wrong_identifier="Πρώτα διαγράφεται το παλαιότερο αρχείο, με κατάληξη pigi, και μετά μετονομάζουμε από τον "
        "μεγαλύτερο αριθμό προς τον μικρότερο, ώστε το app.log.2 να γίνει app.log.3 πριν πάρει τη θέση του το "
        "app.log.1.",
        missing_detail="Πρώτα διαγράφεται το παλαιότερο αρχείο και μετά μετονομάζονται τα υπόλοιπα.",
        wrong_statement="Πρώτα διαγράφεται το τρέχον αρχείο arxeio και μετά μετονομάζουμε από τον μικρότερο αριθμό "
        "προς τον μεγαλύτερο· τα παλιά αρχεία δεν διαγράφονται ποτέ.",
        wrong_language="Πρώτα διαγράφεται το oldest file, the one ending in megisto_plithos, and then we rename from "
        "the highest number down, so app.log.2 becomes app.log.3 before app.log.1 takes its place.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

T = TypeVar("T")


def monadika(stoixeia: Iterable[T], kleidi: Callable[[T], Hashable] = lambda x: x) -> list[T]:
    eidomena: set[Hashable] = set()
    apotelesma: list[T] = []
    for stoixeio in stoixeia:
        k = kleidi(stoixeio)
        @@COMMENT@@
        if k not in eidomena:
            eidomena.add(k)
            apotelesma.append(stoixeio)
    return apotelesma
""",
        comment="Κρατάμε την πρώτη εμφάνιση κάθε κλειδιού και τη σειρά της εισόδου· το σύνολο eidomena κάνει τον "
        "έλεγχο σε σταθερό χρόνο, αντί να ψάχνουμε γραμμικά στο apotelesma.",
        paraphrase="Κρατάμε την πρώτη φορά που εμφανίζεται κάθε κλειδί, διατηρώντας τη σειρά· χάρη στο σύνολο "
        "eidomena ο έλεγχος είναι O(1) και όχι αναζήτηση σε όλη τη λίστα apotelesma.",
        wrong_identifier="Κρατάμε την πρώτη εμφάνιση κάθε κλειδιού και τη σειρά της εισόδου· το σύνολο stoixeia "
        "κάνει τον έλεγχο σε σταθερό χρόνο, αντί να ψάχνουμε γραμμικά στο apotelesma.",
        missing_detail="Κρατάμε την πρώτη εμφάνιση κάθε κλειδιού και τη σειρά της εισόδου.",
        wrong_statement="Κρατάμε την πρώτη εμφάνιση κάθε κλειδιού, αλλά το αποτέλεσμα επιστρέφεται ταξινομημένο· το "
        "eidomena είναι λίστα, άρα ο έλεγχος γίνεται σε γραμμικό χρόνο.",
        wrong_language="Κρατάμε την πρώτη occurrence of each key and keep the input order; the set eidomena makes "
        "the check constant time instead of a linear search through apotelesma.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from datetime import datetime

# Ημερομηνίες όπως τις γράφουμε στην Ελλάδα: ημέρα/μήνας/έτος.
MORFI = "%d/%m/%Y"


def meres_metaxy(apo: str, eos: str) -> int:
    arxi = datetime.strptime(apo, MORFI).date()
    telos = datetime.strptime(eos, MORFI).date()
    @@COMMENT@@
    return abs((telos - arxi).days)
""",
        comment="Η διαφορά δίνεται σε απόλυτη τιμή, άρα δεν έχει σημασία αν το apo είναι πριν ή μετά το eos. Οι "
        "ημερομηνίες δεν έχουν ώρα, οπότε η θερινή ώρα δεν επηρεάζει το αποτέλεσμα.",
        paraphrase="Η διαφορά δίνεται πάντα θετική, οπότε δεν έχει σημασία η σειρά των apo και eos· επειδή "
        "συγκρίνουμε σκέτες ημερομηνίες, η αλλαγή σε θερινή ώρα δεν αλλάζει τίποτα.",
        wrong_identifier="Η διαφορά δίνεται σε απόλυτη τιμή, άρα δεν έχει σημασία αν το MORFI είναι πριν ή μετά το "
        "eos. Οι ημερομηνίες δεν έχουν ώρα, οπότε η θερινή ώρα δεν επηρεάζει το αποτέλεσμα.",
        missing_detail="Η διαφορά δίνεται σε απόλυτη τιμή, άρα δεν έχει σημασία αν το apo είναι πριν ή μετά το eos.",
        wrong_statement="Η διαφορά δίνεται σε ώρες και είναι αρνητική όταν το apo είναι μετά το eos· η θερινή ώρα "
        "μπορεί να αλλάξει το αποτέλεσμα κατά μία ώρα.",
        wrong_language="Η διαφορά δίνεται as an absolute value, so it does not matter whether apo comes before or "
        "after eos. The dates have no time of day, so daylight saving time cannot affect the result.",
    ),
)
