<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="de">
<context>
    <name>DeviceChoice</name>
    <message>
        <source>this build has no CUDA support</source>
        <translation>dieser Build enthält keine CUDA-Unterstützung</translation>
    </message>
    <message>
        <source>no usable NVIDIA GPU: %1</source>
        <translation>keine nutzbare NVIDIA-GPU: %1</translation>
    </message>
    <message>
        <source>CPU chosen in Settings</source>
        <translation>CPU in den Einstellungen gewählt</translation>
    </message>
</context>
<context>
    <name>DiskUsage</name>
    <message>
        <source>Model shards</source>
        <translation>Modell-Shards</translation>
    </message>
    <message>
        <source>Configuration and tokenizer</source>
        <translation>Konfiguration und Tokenizer</translation>
    </message>
    <message>
        <source>Add-on: %1</source>
        <translation>Erweiterung: %1</translation>
    </message>
    <message>
        <source>Install records, cache index and heat</source>
        <translation>Installationsprotokolle, Cache-Index und Nutzungsstatistik</translation>
    </message>
    <message>
        <source>Other files</source>
        <translation>Andere Dateien</translation>
    </message>
</context>
<context>
    <name>Formatting</name>
    <message>
        <source>unknown</source>
        <translation>unbekannt</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 s</translation>
    </message>
    <message>
        <source>%1 min %2 s</source>
        <translation>%1 min %2 s</translation>
    </message>
    <message>
        <source>%1 h %2 min</source>
        <translation>%1 h %2 min</translation>
    </message>
    <message>
        <source>%1/s</source>
        <translation>%1/s</translation>
    </message>
    <message>
        <source>%1 tok/s · first token %2 s · %3 tokens</source>
        <translation>%1 Tok./s · erstes Token %2 s · %3 Tokens</translation>
    </message>
    <message>
        <source> · stopped</source>
        <translation> · abgebrochen</translation>
    </message>
    <message>
        <source> · %1: %2 of %3 guesses accepted</source>
        <translation> · %1: %2 von %3 Vorschlägen angenommen</translation>
    </message>
</context>
<context>
    <name>InstallRunner</name>
    <message>
        <source>Already up to date at %1 (%2)</source>
        <translation>Bereits aktuell bei %1 (%2)</translation>
    </message>
    <message>
        <source>Upgraded %1 from %2 to %3 (%4 commits)</source>
        <translation>%1 von %2 auf %3 aktualisiert (%4 Commits)</translation>
    </message>
    <message>
        <source>An upgrade is available: %1 commits, %2 to %3</source>
        <translation>Eine Aktualisierung ist verfügbar: %1 Commits, %2 auf %3</translation>
    </message>
    <message>
        <source>%1 is ahead of %2: nothing to upgrade</source>
        <translation>%1 ist %2 voraus: nichts zu aktualisieren</translation>
    </message>
</context>
<context>
    <name>JobsView</name>
    <message>
        <source>%1 of %2</source>
        <translation>%1 von %2</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <source>System language</source>
        <translation>Systemsprache</translation>
    </message>
    <message>
        <source>the system keychain</source>
        <translation>der Schlüsselbund des Systems</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::BenchView</name>
    <message>
        <source>Arm</source>
        <translation>Variante</translation>
    </message>
    <message>
        <source>Prompt tokens</source>
        <translation>Prompt-Tokens</translation>
    </message>
    <message>
        <source>New tokens</source>
        <translation>Neue Tokens</translation>
    </message>
    <message>
        <source>&amp;Runs per arm:</source>
        <translation>&amp;Läufe pro Variante:</translation>
    </message>
    <message>
        <source>&amp;Run benchmark</source>
        <translation>Benchmark &amp;starten</translation>
    </message>
    <message>
        <source>S&amp;top</source>
        <translation>S&amp;toppen</translation>
    </message>
    <message>
        <source>&amp;Export JSON…</source>
        <translation>Als JSON &amp;exportieren…</translation>
    </message>
    <message>
        <source>C&amp;lear history</source>
        <translation>Verlauf &amp;löschen</translation>
    </message>
    <message>
        <source>Each arm prefills a prompt and decodes greedily on a fresh session; the median run is kept. Close other programs for steady numbers.</source>
        <translation>Jede Variante verarbeitet einen Prompt und dekodiert greedy in einer frischen Sitzung; der Median-Lauf wird behalten. Schließen Sie andere Programme für stabile Werte.</translation>
    </message>
    <message>
        <source>Tokens per second</source>
        <translation>Tokens pro Sekunde</translation>
    </message>
    <message>
        <source>Where experts came from</source>
        <translation>Woher die Experten kamen</translation>
    </message>
    <message>
        <source>When</source>
        <translation>Wann</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>Modell</translation>
    </message>
    <message>
        <source>Prefill tok/s</source>
        <translation>Prefill Tok./s</translation>
    </message>
    <message>
        <source>Decode tok/s</source>
        <translation>Dekodierung Tok./s</translation>
    </message>
    <message>
        <source>First token</source>
        <translation>Erstes Token</translation>
    </message>
    <message>
        <source>RAM hits</source>
        <translation>RAM-Treffer</translation>
    </message>
    <message>
        <source>Disk reads</source>
        <translation>Plattenlesevorgänge</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>Netzwerk</translation>
    </message>
    <message>
        <source>Export benchmark history</source>
        <translation>Benchmark-Verlauf exportieren</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON (*.json)</translation>
    </message>
    <message>
        <source>Exported %1 results to %2</source>
        <translation>%1 Ergebnisse nach %2 exportiert</translation>
    </message>
    <message>
        <source>Running %1: run %2 of %3…</source>
        <translation>%1 läuft: Lauf %2 von %3…</translation>
    </message>
    <message>
        <source>%1: prefill %2 tok/s, decode %3 tok/s</source>
        <translation>%1: Prefill %2 Tok./s, Dekodierung %3 Tok./s</translation>
    </message>
    <message>
        <source>%1 failed: %2 %3</source>
        <translation>%1 fehlgeschlagen: %2 %3</translation>
    </message>
    <message>
        <source>No model is loaded.</source>
        <translation>Kein Modell geladen.</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 s</translation>
    </message>
    <message>
        <source>Prefill</source>
        <translation>Prefill</translation>
    </message>
    <message>
        <source>Decode</source>
        <translation>Dekodierung</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>RAM</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>Festplatte</translation>
    </message>
    <message>
        <source>no runs yet</source>
        <translation>noch keine Läufe</translation>
    </message>
    <message>
        <source>tok/s</source>
        <translation>Tok./s</translation>
    </message>
    <message>
        <source>% of expert lookups</source>
        <translation>% der Expertenabrufe</translation>
    </message>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>%1 kann nicht geschrieben werden: %2</translation>
    </message>
    <message>
        <source>Benchmark arms</source>
        <translation>Benchmark-Varianten</translation>
    </message>
    <message>
        <source>Benchmark history</source>
        <translation>Benchmark-Verlauf</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::CacheView</name>
    <message>
        <source>&amp;Warm selected layer</source>
        <translation>Gewählte Schicht &amp;vorladen</translation>
    </message>
    <message>
        <source>Fetch every expert of the selected layer now</source>
        <translation>Alle Experten der gewählten Schicht jetzt laden</translation>
    </message>
    <message>
        <source>Evict down to</source>
        <translation>Verdrängen bis auf</translation>
    </message>
    <message>
        <source> GB</source>
        <translation> GB</translation>
    </message>
    <message>
        <source>&amp;Evict</source>
        <translation>&amp;Verdrängen</translation>
    </message>
    <message>
        <source>Punch holes for the least recently used experts until the cache is this small</source>
        <translation>Die am längsten nicht genutzten Experten freigeben, bis der Cache so klein ist</translation>
    </message>
    <message>
        <source>Where experts came from</source>
        <translation>Woher die Experten kamen</translation>
    </message>
    <message>
        <source>Tier</source>
        <translation>Ebene</translation>
    </message>
    <message>
        <source>Lookups</source>
        <translation>Abrufe</translation>
    </message>
    <message>
        <source>Share</source>
        <translation>Anteil</translation>
    </message>
    <message>
        <source>Disk usage</source>
        <translation>Speicherbelegung</translation>
    </message>
    <message>
        <source>Part</source>
        <translation>Teil</translation>
    </message>
    <message>
        <source>On disk</source>
        <translation>Auf der Platte</translation>
    </message>
    <message>
        <source>Files</source>
        <translation>Dateien</translation>
    </message>
    <message>
        <source>&amp;Refresh</source>
        <translation>&amp;Aktualisieren</translation>
    </message>
    <message>
        <source>Warming layer %1…</source>
        <translation>Schicht %1 wird vorgeladen…</translation>
    </message>
    <message>
        <source>Evicting…</source>
        <translation>Wird verdrängt…</translation>
    </message>
    <message>
        <source>%1 — %2</source>
        <translation>%1 – %2</translation>
    </message>
    <message>
        <source>No model is loaded.</source>
        <translation>Kein Modell geladen.</translation>
    </message>
    <message>
        <source>Streaming install: %1 of %2 experts cached, %3 of a %4 cap (%5 per expert). Experts not cached are fetched from the Hub on first use.</source>
        <translation>Streaming-Installation: %1 von %2 Experten zwischengespeichert, %3 von maximal %4 (%5 pro Experte). Nicht gespeicherte Experten werden bei der ersten Nutzung vom Hub geladen.</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>k. A.</translation>
    </message>
    <message>
        <source>VRAM cache</source>
        <translation>VRAM-Cache</translation>
    </message>
    <message>
        <source>RAM cache</source>
        <translation>RAM-Cache</translation>
    </message>
    <message>
        <source>Local disk</source>
        <translation>Lokale Platte</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>Netzwerk</translation>
    </message>
    <message>
        <source>%1 allocated of %2 in file sizes (sparse files)</source>
        <translation>%1 belegt von %2 Dateigröße (Sparse-Dateien)</translation>
    </message>
    <message>
        <source>Total</source>
        <translation>Gesamt</translation>
    </message>
    <message>
        <source>Free on this disk</source>
        <translation>Frei auf dieser Platte</translation>
    </message>
    <message>
        <source>Each of the %1 lookups counts once, in the fastest tier that served it. Experts fetched from the network: %2 (Warm and prefetch included).</source>
        <translation>Jede der %1 Abfragen zählt einmal, in der schnellsten Stufe, die sie bedient hat. Aus dem Netz geholte Experten: %2 (Vorwärmen und Vorabladen eingeschlossen).</translation>
    </message>
    <message>
        <source>Experts per layer: where they are, how much they are used</source>
        <translation>Experten je Schicht: wo sie liegen, wie oft sie genutzt werden</translation>
    </message>
    <message>
        <source>stronger = looked up more often</source>
        <translation>kräftiger = öfter abgefragt</translation>
    </message>
    <message>
        <source>stronger = used more recently</source>
        <translation>kräftiger = zuletzt genutzt</translation>
    </message>
    <message>
        <source>this install keeps no use counts (the RAM expert cache does)</source>
        <translation>diese Installation zählt keine Zugriffe (der RAM-Experten-Cache schon)</translation>
    </message>
    <message>
        <source>Every expert of the %1 layers is in VRAM. Source: %2</source>
        <translation>Jeder Experte der %1 Schichten liegt im VRAM. Quelle: %2</translation>
    </message>
    <message>
        <source>Full install with the RAM expert cache: %1 of %2 experts in RAM (%3 of %4), the rest read from local disk when used.</source>
        <translation>Vollinstallation mit RAM-Experten-Cache: %1 von %2 Experten im RAM (%3 von %4), der Rest wird bei Bedarf von der lokalen Festplatte gelesen.</translation>
    </message>
    <message>
        <source>Full install: all %1 experts of each of %2 layers are read from local disk through the page cache. Source: %3</source>
        <translation>Vollinstallation: alle %1 Experten jeder der %2 Schichten werden über den Seitencache von der lokalen Festplatte gelesen. Quelle: %3</translation>
    </message>
    <message>
        <source>Verified against the Hub: %1 of %2 shards; unverified: %3 on disk (a shard is checked when it is complete; deltafin cache verify --fetch checks them all).</source>
        <translation>Mit dem Hub abgeglichen: %1 von %2 Shards; nicht geprüft: %3 auf der Platte (ein Shard wird geprüft, sobald er vollständig ist; deltafin cache verify --fetch prüft alle).</translation>
    </message>
    <message>
        <source>GPU session: %1 experts in the VRAM tier&apos;s %2 slots now; below it:</source>
        <translation>GPU-Sitzung: %1 Experten jetzt in den %2 Plätzen der VRAM-Stufe; darunter:</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ChatView</name>
    <message>
        <source>&amp;New chat</source>
        <translation>&amp;Neuer Chat</translation>
    </message>
    <message>
        <source>Conversations</source>
        <translation>Unterhaltungen</translation>
    </message>
    <message>
        <source>Delete chat</source>
        <translation>Chat löschen</translation>
    </message>
    <message>
        <source>Ask K3 anything. Ctrl+Enter sends.</source>
        <translation>Fragen Sie K3 alles. Strg+Eingabe sendet.</translation>
    </message>
    <message>
        <source>Message K3…</source>
        <translation>Nachricht an K3…</translation>
    </message>
    <message>
        <source>Message</source>
        <translation>Nachricht</translation>
    </message>
    <message>
        <source>&amp;Think first</source>
        <translation>Erst &amp;nachdenken</translation>
    </message>
    <message>
        <source>Let K3 reason before it answers; the reasoning is shown collapsed</source>
        <translation>K3 denkt vor der Antwort nach; die Überlegungen werden eingeklappt angezeigt</translation>
    </message>
    <message>
        <source>S&amp;top</source>
        <translation>S&amp;toppen</translation>
    </message>
    <message>
        <source>&amp;Send</source>
        <translation>&amp;Senden</translation>
    </message>
    <message>
        <source>%1 — %2</source>
        <translation>%1 – %2</translation>
    </message>
    <message>
        <source>Untitled</source>
        <translation>Ohne Titel</translation>
    </message>
    <message>
        <source>Search chats (Ctrl+F)</source>
        <translation>Chats durchsuchen (Strg+F)</translation>
    </message>
    <message>
        <source>Search chats</source>
        <translation>Chats durchsuchen</translation>
    </message>
    <message>
        <source>More</source>
        <translation>Mehr</translation>
    </message>
    <message>
        <source>More chat actions</source>
        <translation>Weitere Chat-Aktionen</translation>
    </message>
    <message>
        <source>&amp;Rename</source>
        <translation>&amp;Umbenennen</translation>
    </message>
    <message>
        <source>Export as &amp;Markdown…</source>
        <translation>Als &amp;Markdown exportieren…</translation>
    </message>
    <message>
        <source>Export as &amp;JSON…</source>
        <translation>Als &amp;JSON exportieren…</translation>
    </message>
    <message>
        <source>&amp;Import…</source>
        <translation>&amp;Importieren…</translation>
    </message>
    <message>
        <source>Transcript</source>
        <translation>Verlauf</translation>
    </message>
    <message>
        <source>Chat settings</source>
        <translation>Chat-Einstellungen</translation>
    </message>
    <message>
        <source>This chat&apos;s system prompt, sampling and reasoning effort</source>
        <translation>Systemprompt, Sampling und Denkaufwand dieses Chats</translation>
    </message>
    <message>
        <source>Stop the reply (Esc)</source>
        <translation>Antwort anhalten (Esc)</translation>
    </message>
    <message>
        <source>&lt;b&gt;This chat&lt;/b&gt;</source>
        <translation>&lt;b&gt;Dieser Chat&lt;/b&gt;</translation>
    </message>
    <message>
        <source>S&amp;ystem prompt:</source>
        <translation>S&amp;ystemprompt:</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>Systemprompt</translation>
    </message>
    <message>
        <source>Instructions K3 follows in this chat</source>
        <translation>Anweisungen, denen K3 in diesem Chat folgt</translation>
    </message>
    <message>
        <source>0 (greedy)</source>
        <translation>0 (greedy)</translation>
    </message>
    <message>
        <source>0 always picks the most likely token; higher values sample more freely</source>
        <translation>0 wählt immer das wahrscheinlichste Token; höhere Werte wählen freier</translation>
    </message>
    <message>
        <source>T&amp;emperature:</source>
        <translation>T&amp;emperatur:</translation>
    </message>
    <message>
        <source>Sample only from the most likely tokens that together have this probability</source>
        <translation>Nur aus den wahrscheinlichsten Tokens wählen, die zusammen diese Wahrscheinlichkeit haben</translation>
    </message>
    <message>
        <source>To&amp;p-p:</source>
        <translation>To&amp;p-p:</translation>
    </message>
    <message>
        <source>The same seed and settings give the same reply</source>
        <translation>Gleicher Seed und gleiche Einstellungen ergeben dieselbe Antwort</translation>
    </message>
    <message>
        <source>See&amp;d:</source>
        <translation>See&amp;d:</translation>
    </message>
    <message>
        <source>Model default</source>
        <translation>Standard des Modells</translation>
    </message>
    <message>
        <source>Low</source>
        <translation>Niedrig</translation>
    </message>
    <message>
        <source>High</source>
        <translation>Hoch</translation>
    </message>
    <message>
        <source>Max</source>
        <translation>Maximal</translation>
    </message>
    <message>
        <source>How long K3 reasons with &quot;Think first&quot; on</source>
        <translation>Wie lange K3 mit „Erst nachdenken“ überlegt</translation>
    </message>
    <message>
        <source>Thinking e&amp;ffort:</source>
        <translation>Denka&amp;ufwand:</translation>
    </message>
    <message>
        <source>Wait for the reply to finish, then import.</source>
        <translation>Warten Sie, bis die Antwort fertig ist, und importieren Sie dann.</translation>
    </message>
    <message>
        <source>Export as Markdown</source>
        <translation>Als Markdown exportieren</translation>
    </message>
    <message>
        <source>Export as JSON</source>
        <translation>Als JSON exportieren</translation>
    </message>
    <message>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON (*.json)</translation>
    </message>
    <message>
        <source>Export failed</source>
        <translation>Export fehlgeschlagen</translation>
    </message>
    <message>
        <source>Import a chat</source>
        <translation>Chat importieren</translation>
    </message>
    <message>
        <source>Chats (*.md *.json);;All files (*)</source>
        <translation>Chats (*.md *.json);;Alle Dateien (*)</translation>
    </message>
    <message>
        <source>Import failed</source>
        <translation>Import fehlgeschlagen</translation>
    </message>
    <message numerus="yes">
        <source>%1 · %n message(s) · F2 renames</source>
        <translation>
            <numerusform>%1 · %n Nachricht · F2 benennt um</numerusform>
            <numerusform>%1 · %n Nachrichten · F2 benennt um</numerusform>
        </translation>
    </message>
    <message>
        <source>Ask K3 anything. Enter sends, Shift+Enter starts a new line.</source>
        <translation>Fragen Sie K3, was Sie wollen. Enter sendet, Umschalt+Enter beginnt eine neue Zeile.</translation>
    </message>
    <message>
        <source>Send (Enter)</source>
        <translation>Senden (Enter)</translation>
    </message>
    <message>
        <source>Send (Ctrl+Enter)</source>
        <translation>Senden (Strg+Enter)</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ConversationStore</name>
    <message>
        <source>New chat</source>
        <translation>Neuer Chat</translation>
    </message>
    <message>
        <source>Cannot read %1: %2</source>
        <translation>%1 kann nicht gelesen werden: %2</translation>
    </message>
    <message>
        <source>%1 was damaged (%2); it was kept as %1.broken</source>
        <translation>%1 war beschädigt (%2); sie wurde als %1.broken aufbewahrt</translation>
    </message>
    <message>
        <source>You</source>
        <translation>Sie</translation>
    </message>
    <message>
        <source>System</source>
        <translation>System</translation>
    </message>
    <message>
        <source>K3</source>
        <translation>K3</translation>
    </message>
    <message>
        <source>System prompt: %1</source>
        <translation>Systemprompt: %1</translation>
    </message>
    <message>
        <source>There is no such conversation.</source>
        <translation>Diesen Chat gibt es nicht.</translation>
    </message>
    <message>
        <source>Unknown export format &apos;%1&apos; (markdown or json).</source>
        <translation>Unbekanntes Exportformat „%1“ (markdown oder json).</translation>
    </message>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>%1 kann nicht geschrieben werden: %2</translation>
    </message>
    <message>
        <source>%1 is not a conversation exported by Deltafin Studio (Markdown or JSON).</source>
        <translation>%1 ist kein von Deltafin Studio exportierter Chat (Markdown oder JSON).</translation>
    </message>
    <message>
        <source>Tool result: %1</source>
        <translation>Werkzeugergebnis: %1</translation>
    </message>
    <message>
        <source>Called</source>
        <translation>Aufgerufen</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::LocalEngineWorker</name>
    <message>
        <source>the GPU session did not start: %1</source>
        <translation>die GPU-Sitzung ist nicht gestartet: %1</translation>
    </message>
    <message>
        <source>check the model folder in Settings</source>
        <translation>prüfen Sie den Modellordner in den Einstellungen</translation>
    </message>
    <message>
        <source>no model is loaded</source>
        <translation>kein Modell geladen</translation>
    </message>
    <message>
        <source>run the setup wizard or choose a model folder in Settings</source>
        <translation>starten Sie den Einrichtungsassistenten oder wählen Sie einen Modellordner in den Einstellungen</translation>
    </message>
    <message>
        <source>the benchmark was stopped</source>
        <translation>der Benchmark wurde gestoppt</translation>
    </message>
    <message>
        <source>Layer %1 is cached</source>
        <translation>Schicht %1 ist zwischengespeichert</translation>
    </message>
    <message>
        <source>Freed %1 bytes</source>
        <translation>%1 Bytes freigegeben</translation>
    </message>
    <message>
        <source>off in Settings</source>
        <translation>in den Einstellungen ausgeschaltet</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ExpertHeatMap</name>
    <message>
        <source>VRAM</source>
        <translation>VRAM</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>RAM</translation>
    </message>
    <message>
        <source>disk</source>
        <translation>Festplatte</translation>
    </message>
    <message>
        <source>not fetched</source>
        <translation>nicht geladen</translation>
    </message>
    <message>
        <source>Experts per layer by tier</source>
        <translation>Experten je Schicht nach Speicherstufe</translation>
    </message>
    <message>
        <source>%1 layers of %2 experts: %3 in VRAM, %4 in RAM, %5 on disk, %6 not fetched</source>
        <translation>%1 Schichten mit %2 Experten: %3 im VRAM, %4 im RAM, %5 auf der Festplatte, %6 nicht geladen</translation>
    </message>
    <message>
        <source>Layer %1: %2</source>
        <translation>Schicht %1: %2</translation>
    </message>
    <message>
        <source>Expert %1: %2</source>
        <translation>Experte %1: %2</translation>
    </message>
    <message numerus="yes">
        <source>, used %n time(s)</source>
        <translation>
            <numerusform>, %n-mal genutzt</numerusform>
            <numerusform>, %n-mal genutzt</numerusform>
        </translation>
    </message>
    <message>
        <source>No model is loaded</source>
        <translation>Kein Modell geladen</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::InstallJob</name>
    <message>
        <source>Queued</source>
        <translation>Wartend</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>Läuft</translation>
    </message>
    <message>
        <source>Pausing…</source>
        <translation>Wird pausiert…</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>Pausiert</translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>Wird abgebrochen…</translation>
    </message>
    <message>
        <source>Cancelled</source>
        <translation>Abgebrochen</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>Fehlgeschlagen</translation>
    </message>
    <message>
        <source>Done</source>
        <translation>Fertig</translation>
    </message>
    <message>
        <source>Started</source>
        <translation>Gestartet</translation>
    </message>
    <message>
        <source>Finished</source>
        <translation>Abgeschlossen</translation>
    </message>
    <message>
        <source>Paused; the bytes on disk are kept</source>
        <translation>Pausiert; die Daten auf der Platte bleiben erhalten</translation>
    </message>
    <message>
        <source>Cancelled; verified files are kept, run setup again to finish</source>
        <translation>Abgebrochen; geprüfte Dateien bleiben erhalten, starten Sie die Einrichtung erneut, um fertigzustellen</translation>
    </message>
    <message>
        <source>the install stopped</source>
        <translation>die Installation wurde beendet</translation>
    </message>
    <message>
        <source>Failed: %1</source>
        <translation>Fehlgeschlagen: %1</translation>
    </message>
    <message>
        <source>Resuming</source>
        <translation>Wird fortgesetzt</translation>
    </message>
    <message>
        <source>Finished: %1</source>
        <translation>Fertig: %1</translation>
    </message>
    <message>
        <source>the upgrade stopped</source>
        <translation>die Aktualisierung wurde angehalten</translation>
    </message>
    <message>
        <source>the app quit while this upgrade was running</source>
        <translation>die App wurde beendet, während diese Aktualisierung lief</translation>
    </message>
    <message>
        <source>run it again with Resume: an upgrade that had finished reports that it is up to date</source>
        <translation>mit „Fortsetzen“ erneut ausführen: eine bereits abgeschlossene Aktualisierung meldet, dass alles aktuell ist</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::JobsView</name>
    <message>
        <source>Job</source>
        <translation>Auftrag</translation>
    </message>
    <message>
        <source>State</source>
        <translation>Status</translation>
    </message>
    <message>
        <source>Progress</source>
        <translation>Fortschritt</translation>
    </message>
    <message>
        <source>Speed</source>
        <translation>Geschwindigkeit</translation>
    </message>
    <message>
        <source>Time left</source>
        <translation>Restzeit</translation>
    </message>
    <message>
        <source>No jobs yet. Setup, upgrades and add-on installs run here in the background.</source>
        <translation>Noch keine Aufträge. Einrichtung, Aktualisierungen und Erweiterungen laufen hier im Hintergrund.</translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation>&amp;Pausieren</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>&amp;Fortsetzen</translation>
    </message>
    <message>
        <source>&amp;Cancel job</source>
        <translation>Auftrag &amp;abbrechen</translation>
    </message>
    <message>
        <source>Re&amp;move from list</source>
        <translation>Aus Liste &amp;entfernen</translation>
    </message>
    <message>
        <source>Job log</source>
        <translation>Auftragsprotokoll</translation>
    </message>
    <message>
        <source> · %1 · %2 left</source>
        <translation> · %1 · noch %2</translation>
    </message>
    <message>
        <source> · file %1 of %2</source>
        <translation> · Datei %1 von %2</translation>
    </message>
    <message>
        <source>&lt;b&gt;What failed:&lt;/b&gt; %1&lt;br&gt;&lt;b&gt;What to do:&lt;/b&gt; %2</source>
        <translation>&lt;b&gt;Was fehlschlug:&lt;/b&gt; %1&lt;br&gt;&lt;b&gt;Was zu tun ist:&lt;/b&gt; %2</translation>
    </message>
    <message>
        <source>see the log below</source>
        <translation>siehe Protokoll unten</translation>
    </message>
    <message>
        <source>An upgrade runs git and CMake to the end of each step</source>
        <translation>Eine Aktualisierung führt git und CMake bis zum Ende jedes Schritts aus</translation>
    </message>
    <message>
        <source>Jobs</source>
        <translation>Aufträge</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::MainWindow</name>
    <message>
        <source>Deltafin Studio</source>
        <translation>Deltafin Studio</translation>
    </message>
    <message>
        <source>&amp;Chat</source>
        <translation>&amp;Chat</translation>
    </message>
    <message>
        <source>&amp;Jobs</source>
        <translation>&amp;Aufträge</translation>
    </message>
    <message>
        <source>C&amp;ache</source>
        <translation>&amp;Cache</translation>
    </message>
    <message>
        <source>&amp;Benchmark</source>
        <translation>&amp;Benchmark</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>&amp;Datei</translation>
    </message>
    <message>
        <source>&amp;New chat</source>
        <translation>&amp;Neuer Chat</translation>
    </message>
    <message>
        <source>&amp;Setup wizard…</source>
        <translation>&amp;Einrichtungsassistent…</translation>
    </message>
    <message>
        <source>S&amp;ettings…</source>
        <translation>E&amp;instellungen…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>&amp;Beenden</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>&amp;Ansicht</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>&amp;Sprache</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>&amp;Hilfe</translation>
    </message>
    <message>
        <source>&amp;About Deltafin</source>
        <translation>Ü&amp;ber Deltafin</translation>
    </message>
    <message>
        <source>About Deltafin</source>
        <translation>Über Deltafin</translation>
    </message>
    <message>
        <source>&lt;b&gt;Deltafin Studio %1&lt;/b&gt;&lt;p&gt;The full Kimi K3 on one machine: every weight exactly as shipped, streamed from disk into RAM and VRAM caches.&lt;/p&gt;</source>
        <translation>&lt;b&gt;Deltafin Studio %1&lt;/b&gt;&lt;p&gt;Das vollständige Kimi K3 auf einem Rechner: jedes Gewicht exakt wie ausgeliefert, von der Platte in RAM- und VRAM-Caches gestreamt.&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Install &amp;add-ons…</source>
        <translation>&amp;Erweiterungen installieren…</translation>
    </message>
    <message>
        <source>&amp;Upgrade Deltafin…</source>
        <translation>Deltafin a&amp;ktualisieren…</translation>
    </message>
    <message>
        <source>&amp;Import chat…</source>
        <translation>Chat &amp;importieren…</translation>
    </message>
    <message>
        <source>Export chat as &amp;Markdown…</source>
        <translation>Chat als &amp;Markdown exportieren…</translation>
    </message>
    <message>
        <source>Export chat as &amp;JSON…</source>
        <translation>Chat als &amp;JSON exportieren…</translation>
    </message>
    <message>
        <source>Pages</source>
        <translation>Seiten</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::MessageWidget</name>
    <message>
        <source>You</source>
        <translation>Sie</translation>
    </message>
    <message>
        <source>K3</source>
        <translation>K3</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>Kopieren</translation>
    </message>
    <message>
        <source>Copy this message as Markdown</source>
        <translation>Diese Nachricht als Markdown kopieren</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>Neu erzeugen</translation>
    </message>
    <message>
        <source>Replace this answer with a new one</source>
        <translation>Diese Antwort durch eine neue ersetzen</translation>
    </message>
    <message>
        <source>Reasoning</source>
        <translation>Überlegungen</translation>
    </message>
    <message>
        <source>Prompt: %1 tokens at %2 tok/s; total %3 s</source>
        <translation>Prompt: %1 Tokens mit %2 Tok./s; gesamt %3 s</translation>
    </message>
    <message>
        <source>Copy this message</source>
        <translation>Diese Nachricht kopieren</translation>
    </message>
    <message>
        <source>Regenerate this answer</source>
        <translation>Diese Antwort neu erzeugen</translation>
    </message>
    <message>
        <source>Show the reasoning</source>
        <translation>Überlegungen zeigen</translation>
    </message>
    <message>
        <source>Your message</source>
        <translation>Ihre Nachricht</translation>
    </message>
    <message>
        <source>K3&apos;s answer</source>
        <translation>Antwort von K3</translation>
    </message>
    <message>
        <source>Tool result · %1</source>
        <translation>Werkzeugergebnis · %1</translation>
    </message>
    <message>
        <source>System</source>
        <translation>System</translation>
    </message>
    <message>
        <source>The result of call %1</source>
        <translation>Das Ergebnis von Aufruf %1</translation>
    </message>
    <message>
        <source>Tool result</source>
        <translation>Werkzeugergebnis</translation>
    </message>
    <message>
        <source>System message</source>
        <translation>Systemnachricht</translation>
    </message>
    <message>
        <source>Called %1</source>
        <translation>%1 aufgerufen</translation>
    </message>
    <message>
        <source>Tool call: %1</source>
        <translation>Werkzeugaufruf: %1</translation>
    </message>
    <message>
        <source>Call %1</source>
        <translation>Aufruf %1</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::PlacementBar</name>
    <message>
        <source>No placement plan yet.</source>
        <translation>Noch kein Platzierungsplan.</translation>
    </message>
    <message>
        <source>No placement plan: %1</source>
        <translation>Kein Platzierungsplan: %1</translation>
    </message>
    <message>
        <source>Plan: %1 VRAM · %2 RAM · %3 read from disk — predicted %4 tok/s (%5-bound)</source>
        <translation>Plan: %1 VRAM · %2 RAM · %3 von der Platte gelesen — vorhergesagt %4 Tok./s (begrenzt durch %5)</translation>
    </message>
    <message>
        <source>, measured %1 tok/s</source>
        <translation>, gemessen %1 Tok./s</translation>
    </message>
    <message>
        <source>, not measured yet</source>
        <translation>, noch nicht gemessen</translation>
    </message>
    <message>
        <source>Where the placement planner puts the model&apos;s bytes on this machine (as `deltafin plan` prints it). Rates: %1</source>
        <translation>Wohin der Platzierungsplaner die Bytes des Modells auf diesem Rechner legt (wie `deltafin plan` es ausgibt). Raten: %1</translation>
    </message>
    <message>
        <source>Placement plan</source>
        <translation>Platzierungsplan</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::RemoteChatBackend</name>
    <message>
        <source>Remote</source>
        <translation>Entfernt</translation>
    </message>
    <message>
        <source>the endpoint address %1 is not a URL</source>
        <translation>die Endpunktadresse %1 ist keine URL</translation>
    </message>
    <message>
        <source>enter an address such as http://127.0.0.1:8080/v1 in Settings</source>
        <translation>geben Sie in den Einstellungen eine Adresse wie http://127.0.0.1:8080/v1 ein</translation>
    </message>
    <message>
        <source>cannot reach %1: %2</source>
        <translation>%1 ist nicht erreichbar: %2</translation>
    </message>
    <message>
        <source>check that the server runs and the address ends in /v1</source>
        <translation>prüfen Sie, ob der Server läuft und die Adresse auf /v1 endet</translation>
    </message>
    <message>
        <source>%1 lists no models</source>
        <translation>%1 bietet keine Modelle an</translation>
    </message>
    <message>
        <source>enter the model name in Settings</source>
        <translation>geben Sie den Modellnamen in den Einstellungen ein</translation>
    </message>
    <message>
        <source>the server answered %1: %2</source>
        <translation>der Server antwortete %1: %2</translation>
    </message>
    <message>
        <source>check the endpoint and model in Settings</source>
        <translation>prüfen Sie Endpunkt und Modell in den Einstellungen</translation>
    </message>
    <message>
        <source>refusing to send the API key over plain http to %1: anyone on the way could read it</source>
        <translation>der API-Schlüssel wird nicht über unverschlüsseltes http an %1 gesendet: jeder auf dem Weg könnte ihn lesen</translation>
    </message>
    <message>
        <source>use an https address, or an SSH tunnel to 127.0.0.1</source>
        <translation>verwenden Sie eine https-Adresse oder einen SSH-Tunnel nach 127.0.0.1</translation>
    </message>
    <message>
        <source>the server sent more than %1 MiB without ending an event</source>
        <translation>der Server hat mehr als %1 MiB gesendet, ohne ein Ereignis abzuschließen</translation>
    </message>
    <message>
        <source>no data for %1 s</source>
        <translation>seit %1 s keine Daten</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ServerProcess</name>
    <message>
        <source>Server running: %1</source>
        <translation>Server läuft: %1</translation>
    </message>
    <message>
        <source>The server could not run: %1</source>
        <translation>Der Server konnte nicht starten: %1</translation>
    </message>
    <message>
        <source>Server stopped</source>
        <translation>Server gestoppt</translation>
    </message>
    <message>
        <source>The server exited (%1): %2</source>
        <translation>Der Server wurde beendet (%1): %2</translation>
    </message>
    <message>
        <source>The server could not start on the GPU (%1); starting it on the CPU</source>
        <translation>Der Server konnte nicht auf der GPU starten (%1); er wird auf der CPU gestartet</translation>
    </message>
    <message>
        <source>Server listening on %1</source>
        <translation>Server lauscht auf %1</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>Einstellungen</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>Modell</translation>
    </message>
    <message>
        <source>&amp;Browse…</source>
        <translation>&amp;Durchsuchen…</translation>
    </message>
    <message>
        <source>Model folder</source>
        <translation>Modellordner</translation>
    </message>
    <message>
        <source>&amp;Model folder:</source>
        <translation>&amp;Modellordner:</translation>
    </message>
    <message>
        <source>Use the bundled demo model while K3 is not installed</source>
        <translation>Das mitgelieferte Demomodell verwenden, solange K3 nicht installiert ist</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>Engine</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>Automatisch</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>CUDA GPU</source>
        <translation>CUDA-GPU</translation>
    </message>
    <message>
        <source>&amp;Device:</source>
        <translation>&amp;Gerät:</translation>
    </message>
    <message>
        <source> GiB</source>
        <translation> GiB</translation>
    </message>
    <message>
        <source>&amp;RAM expert cache:</source>
        <translation>&amp;RAM-Experten-Cache:</translation>
    </message>
    <message>
        <source>DSpark</source>
        <translation>DSpark</translation>
    </message>
    <message>
        <source>Qwen3</source>
        <translation>Qwen3</translation>
    </message>
    <message>
        <source>Drafters only guess ahead; K3 checks every token, so answers do not change</source>
        <translation>Drafter raten nur voraus; K3 prüft jedes Token, die Antworten ändern sich also nicht</translation>
    </message>
    <message>
        <source>D&amp;rafter:</source>
        <translation>D&amp;rafter:</translation>
    </message>
    <message>
        <source>Longest &amp;reply (tokens):</source>
        <translation>Längste &amp;Antwort (Tokens):</translation>
    </message>
    <message>
        <source>Local server</source>
        <translation>Lokaler Server</translation>
    </message>
    <message>
        <source>Run the OpenAI-compatible server (deltafin serve)</source>
        <translation>Den OpenAI-kompatiblen Server ausführen (deltafin serve)</translation>
    </message>
    <message>
        <source>&amp;Port:</source>
        <translation>&amp;Port:</translation>
    </message>
    <message>
        <source>Remote engine</source>
        <translation>Entfernte Engine</translation>
    </message>
    <message>
        <source>Chat with an OpenAI-compatible endpoint instead of this machine</source>
        <translation>Mit einem OpenAI-kompatiblen Endpunkt statt mit diesem Rechner chatten</translation>
    </message>
    <message>
        <source>&amp;Address:</source>
        <translation>&amp;Adresse:</translation>
    </message>
    <message>
        <source>first model the server lists</source>
        <translation>erstes Modell, das der Server anbietet</translation>
    </message>
    <message>
        <source>Mo&amp;del:</source>
        <translation>Mo&amp;dell:</translation>
    </message>
    <message>
        <source>API &amp;key:</source>
        <translation>API-&amp;Schlüssel:</translation>
    </message>
    <message>
        <source>&amp;Language:</source>
        <translation>&amp;Sprache:</translation>
    </message>
    <message>
        <source>Through the page cache (memory-mapped shards)</source>
        <translation>Über den Seitencache (eingeblendete Shards)</translation>
    </message>
    <message>
        <source>Engine RAM cache over direct disk reads</source>
        <translation>RAM-Cache der Engine über direkte Plattenzugriffe</translation>
    </message>
    <message>
        <source>&amp;Expert reads:</source>
        <translation>&amp;Expertenzugriffe:</translation>
    </message>
    <message>
        <source>Automatic (free memory less a margin)</source>
        <translation>Automatisch (freier Speicher abzüglich Reserve)</translation>
    </message>
    <message>
        <source>Bypass the page cache (O_DIRECT), so experts are not held twice</source>
        <translation>Seitencache umgehen (O_DIRECT), damit Experten nicht doppelt im Speicher liegen</translation>
    </message>
    <message>
        <source>Frequency with decay (LFU)</source>
        <translation>Häufigkeit mit Abklingen (LFU)</translation>
    </message>
    <message>
        <source>Least recently used (LRU)</source>
        <translation>Am längsten ungenutzt (LRU)</translation>
    </message>
    <message>
        <source>Frequency seeded from the saved heat map</source>
        <translation>Häufigkeit, vorbelegt aus der gespeicherten Heatmap</translation>
    </message>
    <message>
        <source>E&amp;viction:</source>
        <translation>&amp;Verdrängung:</translation>
    </message>
    <message>
        <source>Streaming installs keep experts in their own capped stream cache (see the Cache page); the RAM cache applies to full installs. On the GPU the experts also live in a VRAM tier sized from the GPU&apos;s free memory (all of them when they fit).</source>
        <translation>Streaming-Installationen halten Experten in ihrem eigenen begrenzten Stream-Cache (siehe Seite „Cache“); der RAM-Cache gilt für vollständige Installationen. Auf der GPU liegen die Experten zusätzlich in einer VRAM-Stufe, deren Größe sich nach dem freien GPU-Speicher richtet (alle, wenn sie hineinpassen).</translation>
    </message>
    <message>
        <source>Automatic (DSpark if installed, else n-gram)</source>
        <translation>Automatisch (DSpark, falls installiert, sonst N-Gramm)</translation>
    </message>
    <message>
        <source>Off (plain decoding)</source>
        <translation>Aus (einfaches Dekodieren)</translation>
    </message>
    <message>
        <source>n-gram (no model)</source>
        <translation>N-Gramm (ohne Modell)</translation>
    </message>
    <message>
        <source>any free port</source>
        <translation>beliebiger freier Port</translation>
    </message>
    <message>
        <source>Enter sends a message, Shift+Enter starts a new line (off: Ctrl+Enter sends)</source>
        <translation>Enter sendet, Umschalt+Enter beginnt eine neue Zeile (aus: Strg+Enter sendet)</translation>
    </message>
    <message>
        <source>The key is kept in %1, not in the settings file.</source>
        <translation>Der Schlüssel wird in %1 aufbewahrt, nicht in der Einstellungsdatei.</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::SetupWizard</name>
    <message>
        <source>Set up Deltafin</source>
        <translation>Deltafin einrichten</translation>
    </message>
    <message>
        <source>Welcome to Deltafin</source>
        <translation>Willkommen bei Deltafin</translation>
    </message>
    <message>
        <source>Deltafin runs the full Kimi K3 on this machine, every weight exactly as Moonshot shipped it. The next pages download it: either all of it (1.56 TB), or a streaming install that fetches experts when they are first used.</source>
        <translation>Deltafin führt das vollständige Kimi K3 auf diesem Rechner aus, jedes Gewicht exakt so, wie Moonshot es ausgeliefert hat. Die nächsten Seiten laden es herunter: entweder vollständig (1,56 TB) oder als Streaming-Installation, die Experten bei der ersten Nutzung lädt.</translation>
    </message>
    <message>
        <source>Not ready to download? The bundled demo model is a very small K3 in K3&apos;s exact format, trained on the King James Bible, so you can try every part of the app right now. It is not Kimi K3: it answers in the Bible&apos;s English.</source>
        <translation>Noch nicht bereit zum Herunterladen? Das mitgelieferte Demomodell ist ein sehr kleines K3 im exakten Format von K3, trainiert auf der King-James-Bibel, sodass Sie jeden Teil der App sofort ausprobieren können. Es ist nicht Kimi K3: Es antwortet im Englisch der Bibel.</translation>
    </message>
    <message>
        <source>Try the &amp;demo model</source>
        <translation>&amp;Demomodell ausprobieren</translation>
    </message>
    <message>
        <source>How should K3 be installed?</source>
        <translation>Wie soll K3 installiert werden?</translation>
    </message>
    <message>
        <source>&amp;Full install: every file from the Hub, verified (about 1.56 TB)</source>
        <translation>&amp;Vollständige Installation: jede Datei vom Hub, geprüft (etwa 1,56 TB)</translation>
    </message>
    <message>
        <source>&amp;Streaming install: configuration and non-expert weights now (about 114 GB); experts are fetched on first use into a capped cache</source>
        <translation>&amp;Streaming-Installation: Konfiguration und Nicht-Experten-Gewichte jetzt (etwa 114 GB); Experten werden bei der ersten Nutzung in einen begrenzten Cache geladen</translation>
    </message>
    <message>
        <source>&amp;Browse…</source>
        <translation>&amp;Durchsuchen…</translation>
    </message>
    <message>
        <source>Model folder</source>
        <translation>Modellordner</translation>
    </message>
    <message>
        <source>&amp;Model folder:</source>
        <translation>&amp;Modellordner:</translation>
    </message>
    <message>
        <source>&amp;Hub address:</source>
        <translation>&amp;Hub-Adresse:</translation>
    </message>
    <message>
        <source>Free on this disk: %1</source>
        <translation>Frei auf dieser Platte: %1</translation>
    </message>
    <message>
        <source>Add-ons</source>
        <translation>Erweiterungen</translation>
    </message>
    <message>
        <source>D&amp;Spark drafter (recommended: faster replies, identical answers)</source>
        <translation>D&amp;Spark-Drafter (empfohlen: schnellere Antworten, identische Ergebnisse)</translation>
    </message>
    <message>
        <source>&amp;Qwen3 0.6B and 1.7B drafters</source>
        <translation>&amp;Qwen3-0.6B- und -1.7B-Drafter</translation>
    </message>
    <message>
        <source>Every repository is installed at the revision Deltafin was tested with:</source>
        <translation>Jedes Repository wird in der Revision installiert, mit der Deltafin getestet wurde:</translation>
    </message>
    <message>
        <source>Part</source>
        <translation>Teil</translation>
    </message>
    <message>
        <source>Repository</source>
        <translation>Repository</translation>
    </message>
    <message>
        <source>Revision</source>
        <translation>Revision</translation>
    </message>
    <message>
        <source>Disk space</source>
        <translation>Speicherplatz</translation>
    </message>
    <message>
        <source>Files</source>
        <translation>Dateien</translation>
    </message>
    <message>
        <source>On disk</source>
        <translation>Auf der Platte</translation>
    </message>
    <message>
        <source>To download</source>
        <translation>Herunterzuladen</translation>
    </message>
    <message>
        <source>&amp;Install in the background</source>
        <translation>Im &amp;Hintergrund installieren</translation>
    </message>
    <message>
        <source>Asking the Hub for the file lists…</source>
        <translation>Dateilisten werden vom Hub abgefragt…</translation>
    </message>
    <message>
        <source>The plan failed: %1</source>
        <translation>Die Planung ist fehlgeschlagen: %1</translation>
    </message>
    <message>
        <source>Needed: %1 to download (%2 on disk in all). Free: %3.</source>
        <translation>Benötigt: %1 zum Herunterladen (%2 insgesamt auf der Platte). Frei: %3.</translation>
    </message>
    <message>
        <source> Expert cache cap: %1.</source>
        <translation> Obergrenze des Experten-Caches: %1.</translation>
    </message>
    <message>
        <source> This does not fit: choose another folder or a streaming install.</source>
        <translation> Das passt nicht: wählen Sie einen anderen Ordner oder eine Streaming-Installation.</translation>
    </message>
    <message>
        <source>Streaming install of Kimi K3</source>
        <translation>Streaming-Installation von Kimi K3</translation>
    </message>
    <message>
        <source>Full install of Kimi K3</source>
        <translation>Vollständige Installation von Kimi K3</translation>
    </message>
    <message>
        <source>K3 already installed? Add the drafters (DSpark, Qwen3) to it without touching the model.</source>
        <translation>K3 schon installiert? Fügen Sie die Entwurfsmodelle (DSpark, Qwen3) hinzu, ohne das Modell anzutasten.</translation>
    </message>
    <message>
        <source>Install only &amp;add-ons…</source>
        <translation>Nur &amp;Erweiterungen installieren…</translation>
    </message>
    <message>
        <source>The add-ons go into this K3 install&apos;s addons folder; the model itself is not touched.</source>
        <translation>Die Erweiterungen kommen in den addons-Ordner dieser K3-Installation; das Modell selbst bleibt unverändert.</translation>
    </message>
    <message>
        <source>This folder holds no K3 install yet. The drafters are installed anyway, but they only help once K3 is installed here.</source>
        <translation>Dieser Ordner enthält noch keine K3-Installation. Die Entwurfsmodelle werden trotzdem installiert, helfen aber erst, wenn K3 hier installiert ist.</translation>
    </message>
    <message>
        <source>Which install gets the add-ons?</source>
        <translation>Welche Installation erhält die Erweiterungen?</translation>
    </message>
    <message>
        <source>Install add-ons</source>
        <translation>Erweiterungen installieren</translation>
    </message>
    <message>
        <source>no add-on is chosen</source>
        <translation>keine Erweiterung ausgewählt</translation>
    </message>
    <message>
        <source>Choose DSpark, Qwen3 or both on the previous page.</source>
        <translation>Wählen Sie auf der vorigen Seite DSpark, Qwen3 oder beide.</translation>
    </message>
    <message>
        <source>DSpark</source>
        <translation>DSpark</translation>
    </message>
    <message>
        <source>Qwen3</source>
        <translation>Qwen3</translation>
    </message>
    <message>
        <source>Add-ons: %1</source>
        <translation>Erweiterungen: %1</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::StatusPanel</name>
    <message>
        <source>No model loaded</source>
        <translation>Kein Modell geladen</translation>
    </message>
    <message>
        <source>%1 · %2</source>
        <translation>%1 · %2</translation>
    </message>
    <message>
        <source>%1 tok/s</source>
        <translation>%1 Tok./s</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>k. A.</translation>
    </message>
    <message>
        <source>Experts: %1</source>
        <translation>Experten: %1</translation>
    </message>
    <message>
        <source>Drafter: %1</source>
        <translation>Entwurfsmodell: %1</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>Status</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>Backend</translation>
    </message>
    <message>
        <source>Why CPU?</source>
        <translation>Warum CPU?</translation>
    </message>
    <message>
        <source>Speed</source>
        <translation>Geschwindigkeit</translation>
    </message>
    <message>
        <source>Expert lookups per tier</source>
        <translation>Expertenabrufe je Speicherstufe</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>Festplatte</translation>
    </message>
    <message>
        <source>Disk –</source>
        <translation>Festplatte –</translation>
    </message>
    <message>
        <source>Loading…</source>
        <translation>Lädt…</translation>
    </message>
    <message>
        <source>Loading… %1</source>
        <translation>Lädt… %1</translation>
    </message>
    <message>
        <source>%1 · demo model</source>
        <translation>%1 · Demomodell</translation>
    </message>
    <message>
        <source> · %1</source>
        <translation> · %1</translation>
    </message>
    <message>
        <source>%1, demo model (trained on the King James Bible)</source>
        <translation>%1, Demomodell (trainiert auf der King-James-Bibel)</translation>
    </message>
    <message>
        <source>%1, %2</source>
        <translation>%1, %2</translation>
    </message>
    <message>
        <source>Not on the GPU: %1</source>
        <translation>Nicht auf der GPU: %1</translation>
    </message>
    <message>
        <source>%1. Click to open the device settings.</source>
        <translation>%1. Klicken öffnet die Geräteeinstellungen.</translation>
    </message>
    <message>
        <source>No model</source>
        <translation>Kein Modell</translation>
    </message>
    <message>
        <source>Decode speed of the last reply</source>
        <translation>Dekodiergeschwindigkeit der letzten Antwort</translation>
    </message>
    <message>
        <source>Experts –</source>
        <translation>Experten –</translation>
    </message>
    <message>
        <source>Where expert lookups were served (VRAM, RAM, disk, network); none yet</source>
        <translation>Woher Expertenabrufe bedient wurden (VRAM, RAM, Festplatte, Netz); noch keine</translation>
    </message>
    <message>
        <source>VRAM %1</source>
        <translation>VRAM %1</translation>
    </message>
    <message>
        <source>RAM %1</source>
        <translation>RAM %1</translation>
    </message>
    <message>
        <source>disk %1</source>
        <translation>Platte %1</translation>
    </message>
    <message>
        <source>net %1</source>
        <translation>Netz %1</translation>
    </message>
    <message>
        <source>Experts %1</source>
        <translation>Experten %1</translation>
    </message>
    <message>
        <source>%1 expert lookups since the model was loaded, each counted in the fastest tier that served it:
VRAM %2 · RAM %3 · disk %4 · network %5</source>
        <translation>%1 Expertenabrufe seit dem Laden des Modells, jeder in der schnellsten Stufe gezählt, die ihn bediente:
VRAM %2 · RAM %3 · Festplatte %4 · Netz %5</translation>
    </message>
    <message>
        <source>%1 free</source>
        <translation>%1 frei</translation>
    </message>
    <message>
        <source>Model folder %1: %2 used, %3 free on its disk</source>
        <translation>Modellordner %1: %2 belegt, %3 frei auf seiner Festplatte</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::UpgradeDialog</name>
    <message>
        <source>Upgrade Deltafin</source>
        <translation>Deltafin aktualisieren</translation>
    </message>
    <message>
        <source>Fetches the git checkout&apos;s upstream, fast-forwards it (never merges or rebases) and rebuilds it with the CMake configuration it was built with, so a CUDA build stays a CUDA build. Models and caches are not touched. A checkout with local changes, a detached HEAD or diverged history is refused, with what to do.</source>
        <translation>Holt den Upstream des git-Checkouts, spult ihn vor (ohne Merge oder Rebase) und baut ihn mit der CMake-Konfiguration neu, mit der er gebaut wurde; ein CUDA-Build bleibt also ein CUDA-Build. Modelle und Caches bleiben unberührt. Ein Checkout mit lokalen Änderungen, losgelöstem HEAD oder abweichender Historie wird abgelehnt, mit Hinweis, was zu tun ist.</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>Durchsuchen…</translation>
    </message>
    <message>
        <source>Choose a folder</source>
        <translation>Ordner wählen</translation>
    </message>
    <message>
        <source>&amp;Source checkout:</source>
        <translation>&amp;Quell-Checkout:</translation>
    </message>
    <message>
        <source>B&amp;uild folder:</source>
        <translation>B&amp;uild-Ordner:</translation>
    </message>
    <message>
        <source>&amp;Only check whether an upgrade is available</source>
        <translation>Nur &amp;prüfen, ob eine Aktualisierung verfügbar ist</translation>
    </message>
    <message>
        <source>&amp;Upgrade in the background</source>
        <translation>Im &amp;Hintergrund aktualisieren</translation>
    </message>
    <message>
        <source>Check for a Deltafin upgrade</source>
        <translation>Nach einer Deltafin-Aktualisierung suchen</translation>
    </message>
</context>
</TS>
