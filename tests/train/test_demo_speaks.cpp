// The bundled demo speaks English: `deltafin run` on <build>/demo-model exactly as
// `installers/bootstrap.sh run` starts it (greedy, the default; its drafter <build>/demo-dspark is
// found beside it), on 10 prompts, raw completion and chat. At least 80% of the generated words must
// be in /usr/share/dict/words (Debian's wamerican); the share of each prompt is printed. The
// random-weight demo (`deltafin synth --preset demo`) scores about 9% (4 of 43 words, 2026-12-05),
// so this fails if the bundle is not a trained model.
#include <QRegularExpression>
#include <fstream>
#include <set>

#include "support/test_support.h"

namespace T = deltafin::test;

namespace {

struct Prompt {
  const char* text;
  bool chat;
};

// Raw completions of the Bible's openings, and chat turns: `bootstrap.sh run` sends "Hello" as a
// chat turn (a raw "Hello" is answered "Hello!" and the end of a message, since the model met it only
// in chat turns), and the Studio's first conversation starts with turns of these kinds.
const Prompt kPrompts[] = {{"Blessed are", false},
                           {"In the beginning", false},
                           {"The Lord is my shepherd", false},
                           {"And it came to pass", false},
                           {"The king said", false},
                           {"Once upon a time", false},
                           {"Hello", true},
                           {"Who are you?", true},
                           {"Tell me a verse about light.", true},
                           {"Which book comes after Genesis?", true}};

}  // namespace

class TestDemoSpeaks : public QObject {
  Q_OBJECT

 private slots:
  void demoAnswersInDictionaryWords() {
    const std::string dictPath = "/usr/share/dict/words";
    std::ifstream dict(dictPath);
    if (!dict) DELTAFIN_SKIP_UNLESS_CI(dictPath + " is missing (apt-get install wamerican)");
    std::set<std::string> words;
    for (std::string w; std::getline(dict, w);)
      if (!w.empty()) words.insert(QString::fromStdString(w).toLower().toStdString());
    QVERIFY(words.size() > 50000);

    const std::string demo = T::build_dir() + "/demo-model";
    // Words are the whitespace-separated pieces that hold a letter, punctuation around them taken off.
    // One is English when it is letters only (an apostrophe inside: "LORD's") and in the dictionary;
    // of single letters only a, I and O count, since the word list holds every letter of the alphabet.
    const QRegularExpression special("<\\|[^|]*\\|>"), space("\\s+"), letter("[A-Za-z]"),
        edges("^[^A-Za-z0-9]+|[^A-Za-z0-9]+$"), lettersOnly("^[A-Za-z]+(?:'[A-Za-z]+)*$");
    int allWords = 0, allKnown = 0;
    for (const Prompt& p : kPrompts) {
      std::vector<std::string> argv = {
          T::bin_dir() + "/deltafin", "run", "--model-root", demo, "--prompt", p.text, "--max-new",
          p.chat ? "80" : "40"};
      if (p.chat) argv.push_back("--chat");
      const T::RunResult r = T::run_process(argv, 300000);
      QVERIFY2(r.code == 0, qPrintable(QString::fromStdString(r.err)));
      // A raw run echoes the prompt first: only what the model generated is counted.
      QString out = QString::fromStdString(r.out);
      if (!p.chat) {
        QVERIFY2(out.startsWith(p.text), qPrintable(out));
        out = out.mid(int(std::string(p.text).size()));
      }
      // K3's markup (<|close|>, <|end_of_msg|>) that a raw completion may run into is not text.
      out.replace(special, " ");
      int n = 0, known = 0;
      QStringList unknown;
      for (QString w : out.split(space, Qt::SkipEmptyParts)) {
        if (!w.contains(letter)) continue;  // numbers such as 3:16
        w.remove(edges);
        ++n;
        const bool english = lettersOnly.match(w).hasMatch() && (w.size() > 1 || QString("aAIO").contains(w)) &&
                             words.count(w.toLower().toStdString());
        if (english) ++known;
        else unknown << w;
      }
      qInfo("%-5s %-34s %3d of %3d words in the dictionary (%5.1f%%)%s%s", p.chat ? "chat" : "raw",
            qPrintable(QString("\"%1\"").arg(p.text)), known, n, n ? 100.0 * known / n : 0.0,
            unknown.isEmpty() ? "" : ", not: ", qPrintable(unknown.join(' ')));
      qInfo("      -> %s", qPrintable(out.simplified()));
      // Every prompt gets an answer in words, not only punctuation or numbers.
      QVERIFY2(n >= 3, qPrintable(QString("'%1' gave %2 words: '%3'").arg(p.text).arg(n).arg(out)));
      allWords += n;
      allKnown += known;
    }
    const double share = double(allKnown) / allWords;
    qInfo("all prompts: %d of %d words in the dictionary (%.1f%%)", allKnown, allWords, 100.0 * share);
    QVERIFY2(share >= 0.8, qPrintable(QString("only %1% of the demo's words are English").arg(100.0 * share)));
  }
};

QTEST_GUILESS_MAIN(TestDemoSpeaks)
#include "test_demo_speaks.moc"
