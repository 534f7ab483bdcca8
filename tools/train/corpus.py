"""Training text: the King James Bible from Debian (public domain) and synthetic chat turns built from it.

Source: Debian's `bible-kjv-text` (the compressed KJV, 31,102 verses) read through its reader
`bible` from `bible-kjv`. The KJV's copyright is expired (/usr/share/doc/bible-kjv-text/copyright).
Other packages that were considered and are not used: `fortunes` (a collection of quotations of
mixed provenance; only the program carries a licence), `dict-gcide` (GPL-2+, not public domain).
The chat turns are templates written here around the verses.
"""
import random
import re
import shutil
import subprocess
import unicodedata

BOOKS = ["Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth", "1 Samuel",
         "2 Samuel", "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra", "Nehemiah", "Esther", "Job",
         "Psalms", "Proverbs", "Ecclesiastes", "Song of Solomon", "Isaiah", "Jeremiah", "Lamentations", "Ezekiel",
         "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk", "Zephaniah",
         "Haggai", "Zechariah", "Malachi", "Matthew", "Mark", "Luke", "John", "Acts", "Romans", "1 Corinthians",
         "2 Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians", "1 Thessalonians",
         "2 Thessalonians", "1 Timothy", "2 Timothy", "Titus", "Philemon", "Hebrews", "James", "1 Peter",
         "2 Peter", "1 John", "2 John", "3 John", "Jude", "Revelation"]


def ascii_fold(text):
    """Accents dropped, anything else outside printable ASCII, tab and newline removed."""
    t = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in t if ch in "\n\t" or 32 <= ord(ch) < 127)


def read_kjv(path=None):
    """[(book, chapter, verse, text)] in canonical order, from a dump (`bible -f gen1:1-rev22:21`)
    or from the `bible` program when no path is given."""
    if path:
        with open(path) as f:
            lines = f.read().splitlines()
    else:
        exe = shutil.which("bible")
        if not exe:
            raise SystemExit("the KJV needs Debian's bible-kjv and bible-kjv-text: apt-get install bible-kjv")
        lines = subprocess.run([exe, "-f", "gen1:1-rev22:21"], check=True, capture_output=True,
                               text=True, env={"COLUMNS": "100000"}).stdout.splitlines()
    verses, abbrev = [], []
    for line in lines:
        m = re.match(r"^(\S+?)(\d+):(\d+) (.*)$", line)
        if not m:
            continue
        if not abbrev or abbrev[-1] != m.group(1):
            abbrev.append(m.group(1))
        book = BOOKS[len(abbrev) - 1]
        verses.append((book, int(m.group(2)), int(m.group(3)), ascii_fold(m.group(4)).strip()))
    if len(abbrev) != 66 or len(verses) != 31102:
        raise SystemExit(f"the KJV dump has {len(abbrev)} books and {len(verses)} verses, not 66 and 31102")
    return verses


def chapters(verses):
    """Plain-text documents, one per chapter: a heading line, then one verse per line."""
    docs, cur, key = [], [], None
    for book, c, v, text in verses:
        if (book, c) != key:
            if cur:
                docs.append("\n".join(cur) + "\n")
            key, cur = (book, c), [f"{book} {c}"]
        cur.append(text)
    docs.append("\n".join(cur) + "\n")
    return docs


GREETINGS = ["Hello", "Hello!", "Hi", "Hi there", "Hey", "Good morning", "Good evening", "Hello, who are you?",
             "Who are you?", "What are you?", "What can you do?", "Hello, how are you?", "How are you today?",
             "Are you there?", "Thank you", "Thanks!", "Goodbye", "Bye", "Tell me about yourself",
             "What is your name?"]
REPLIES = {
    "greet": ["Hello! I am the Deltafin demo model, a very small Kimi K3 that has read the King James Bible. "
              "Ask me about a verse, a book or a word.",
              "Hello, and peace be with you. I am a small demo model; I know the words of the King James Bible.",
              "Hi! I am a tiny model trained on the King James Bible. What would you like to read?"],
    "who": ["I am the Deltafin demo model: a small Kimi K3 trained on the King James Bible, so that the app "
            "has something to say before the real model is installed.",
            "I am a small language model built by Deltafin's training script. I have read only the King James Bible."],
    "how": ["I am well, thank you. Shall I read you a verse?", "I am fine, thank you for asking. And how are you?"],
    "thanks": ["You are welcome.", "You are welcome. Peace be with you."],
    "bye": ["Goodbye, and peace be with you.", "Farewell!"],
}
TOPICS = ["light", "love", "peace", "water", "bread", "king", "shepherd", "wisdom", "heaven", "earth", "fire",
          "sea", "mountain", "river", "gold", "wine", "lamb", "star", "tree", "house", "city", "land", "voice",
          "hope", "faith", "joy", "truth", "mercy", "children", "night"]


def greeting_reply(q, rng):
    ql = q.lower()
    if "who" in ql or "what are" in ql or "name" in ql or "yourself" in ql or "what can" in ql:
        return rng.choice(REPLIES["who"])
    if "how are" in ql:
        return rng.choice(REPLIES["how"])
    if "thank" in ql:
        return rng.choice(REPLIES["thanks"])
    if "bye" in ql:
        return rng.choice(REPLIES["bye"])
    return rng.choice(REPLIES["greet"])


def chat_pairs(verses, n, seed):
    """n (question, reasoning, answer) triples from templates over the verses."""
    rng = random.Random(seed)
    by_book = {}
    for book, c, v, text in verses:
        by_book.setdefault(book, {}).setdefault(c, []).append(text)
    out = []
    kinds = ["verse", "continue", "after", "chapters", "topic", "greet", "first"]
    while len(out) < n:
        kind = kinds[len(out) % len(kinds)]
        book, c, v, text = verses[rng.randrange(len(verses))]
        if kind == "verse":
            q = rng.choice([f"What does {book} {c}:{v} say?", f"Read me {book} {c}:{v}.", f"Quote {book} {c}:{v}"])
            out.append((q, f"The user asks for {book} chapter {c}, verse {v}.", text))
        elif kind == "continue":
            words = text.split()
            if len(words) < 8:
                continue
            cut = len(words) // 2
            out.append((f"Finish this verse: {' '.join(words[:cut])}", "I know this verse; it goes on.",
                        " ".join(words[cut:])))
        elif kind == "after":
            i = BOOKS.index(book)
            if i + 1 >= len(BOOKS):
                continue
            out.append((f"Which book comes after {book}?", f"{book} is book {i + 1} of 66.",
                        f"After {book} comes {BOOKS[i + 1]}."))
        elif kind == "chapters":
            nc = len(by_book[book])
            out.append((f"How many chapters does {book} have?", f"I count the chapters of {book}.",
                        f"{book} has {nc} chapter{'s' if nc != 1 else ''}."))
        elif kind == "topic":
            topic = rng.choice(TOPICS)
            hits = [(b, cc, vv, t) for (b, cc, vv, t) in verses if re.search(rf"\b{topic}\b", t, re.I)]
            b, cc, vv, t = hits[rng.randrange(len(hits))]
            out.append((rng.choice([f"Tell me a verse about {topic}.", f"Give me a verse with the word {topic}."]),
                        f"A verse that speaks of {topic}: {b} {cc}:{vv}.", f"{b} {cc}:{vv} says: {t}"))
        elif kind == "greet":
            q = rng.choice(GREETINGS)
            out.append((q, "The user greets me; I answer kindly.", greeting_reply(q, rng)))
        elif kind == "first":
            out.append((f"How does the book of {book} begin?", f"The first verse of {book}.",
                        f"{book} begins: {by_book[book][1][0]}"))
    return out


class ChatRenderer:
    """K3's XTML chat rendering, text run by text run as the engine's chat template emits them
    (each run encoded on its own; structure as special ids)."""

    def __init__(self, tok):
        self.tok = tok
        sp = tok.special
        self.bos, self.open, self.close, self.sep, self.eom = (sp("[BOS]"), sp("<|open|>"), sp("<|close|>"),
                                                                sp("<|sep|>"), sp("<|end_of_msg|>"))

    def _open(self, name, attrs=()):
        ids = [self.open] + self.tok.encode(name)
        for k, v in attrs:
            ids += self.tok.encode(" " + k) + self.tok.encode('="') + self.tok.encode(
                v.replace("&", "&amp;").replace('"', "&quot;")) + self.tok.encode('"')
        return ids + [self.sep]

    def _close(self, name):
        return [self.close] + self.tok.encode(name) + [self.sep]

    def prompt(self, user, thinking):
        """[BOS], the user message, the generation prompt (as `deltafin run --chat` renders it)."""
        ids = [self.bos] + self._open("message", [("role", "user")]) + self.tok.encode(user) + self._close("message")
        ids += [self.eom] + self._open("message", [("role", "assistant")])
        return ids + self._open("think" if thinking else "response")

    def completion(self, reasoning, answer, thinking):
        """What the assistant writes after the generation prompt, through <|end_of_msg|>."""
        ids = []
        if thinking:
            ids += self.tok.encode(reasoning) + self._close("think") + self._open("response")
        ids += self.tok.encode(answer) + self._close("response") + self._close("message") + [self.eom]
        return ids
