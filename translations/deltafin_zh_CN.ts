<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>DeviceChoice</name>
    <message>
        <source>this build has no CUDA support</source>
        <translation>此构建不含 CUDA 支持</translation>
    </message>
    <message>
        <source>no usable NVIDIA GPU: %1</source>
        <translation>没有可用的 NVIDIA GPU：%1</translation>
    </message>
    <message>
        <source>CPU chosen in Settings</source>
        <translation>已在设置中选择 CPU</translation>
    </message>
</context>
<context>
    <name>DiskUsage</name>
    <message>
        <source>Model shards</source>
        <translation>模型分片</translation>
    </message>
    <message>
        <source>Configuration and tokenizer</source>
        <translation>配置和分词器</translation>
    </message>
    <message>
        <source>Add-on: %1</source>
        <translation>附加组件：%1</translation>
    </message>
    <message>
        <source>Install records, cache index and heat</source>
        <translation>安装记录、缓存索引和热度</translation>
    </message>
    <message>
        <source>Other files</source>
        <translation>其他文件</translation>
    </message>
</context>
<context>
    <name>Formatting</name>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <source>%1 min %2 s</source>
        <translation>%1 分 %2 秒</translation>
    </message>
    <message>
        <source>%1 h %2 min</source>
        <translation>%1 小时 %2 分</translation>
    </message>
    <message>
        <source>%1/s</source>
        <translation>%1/秒</translation>
    </message>
    <message>
        <source>%1 tok/s · first token %2 s · %3 tokens</source>
        <translation>%1 词元/秒 · 首词元 %2 秒 · %3 个词元</translation>
    </message>
    <message>
        <source> · stopped</source>
        <translation> · 已停止</translation>
    </message>
    <message>
        <source> · %1: %2 of %3 guesses accepted</source>
        <translation> · %1：%3 个猜测中接受了 %2 个</translation>
    </message>
</context>
<context>
    <name>InstallRunner</name>
    <message>
        <source>Already up to date at %1 (%2)</source>
        <translation>已是最新：%1（%2）</translation>
    </message>
    <message>
        <source>Upgraded %1 from %2 to %3 (%4 commits)</source>
        <translation>已将 %1 从 %2 升级到 %3（%4 个提交）</translation>
    </message>
    <message>
        <source>An upgrade is available: %1 commits, %2 to %3</source>
        <translation>有可用升级：%1 个提交，%2 到 %3</translation>
    </message>
    <message>
        <source>%1 is ahead of %2: nothing to upgrade</source>
        <translation>%1 领先于 %2：无需升级</translation>
    </message>
</context>
<context>
    <name>JobsView</name>
    <message>
        <source>%1 of %2</source>
        <translation>%1 / %2</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <source>System language</source>
        <translation>系统语言</translation>
    </message>
    <message>
        <source>the system keychain</source>
        <translation>系统钥匙串</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::BenchView</name>
    <message>
        <source>Arm</source>
        <translation>测试项</translation>
    </message>
    <message>
        <source>Prompt tokens</source>
        <translation>提示词元</translation>
    </message>
    <message>
        <source>New tokens</source>
        <translation>新词元</translation>
    </message>
    <message>
        <source>&amp;Runs per arm:</source>
        <translation>每项运行次数(&amp;R)：</translation>
    </message>
    <message>
        <source>&amp;Run benchmark</source>
        <translation>运行基准测试(&amp;R)</translation>
    </message>
    <message>
        <source>S&amp;top</source>
        <translation>停止(&amp;T)</translation>
    </message>
    <message>
        <source>&amp;Export JSON…</source>
        <translation>导出 JSON(&amp;E)…</translation>
    </message>
    <message>
        <source>C&amp;lear history</source>
        <translation>清除历史(&amp;L)</translation>
    </message>
    <message>
        <source>Each arm prefills a prompt and decodes greedily on a fresh session; the median run is kept. Close other programs for steady numbers.</source>
        <translation>每个测试项在新会话中预填充提示并贪心解码，保留中位数那次运行。关闭其他程序可获得稳定的数值。</translation>
    </message>
    <message>
        <source>Tokens per second</source>
        <translation>每秒词元数</translation>
    </message>
    <message>
        <source>Where experts came from</source>
        <translation>专家来源</translation>
    </message>
    <message>
        <source>When</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Prefill tok/s</source>
        <translation>预填充 词元/秒</translation>
    </message>
    <message>
        <source>Decode tok/s</source>
        <translation>解码 词元/秒</translation>
    </message>
    <message>
        <source>First token</source>
        <translation>首词元</translation>
    </message>
    <message>
        <source>RAM hits</source>
        <translation>内存命中</translation>
    </message>
    <message>
        <source>Disk reads</source>
        <translation>磁盘读取</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>Export benchmark history</source>
        <translation>导出基准测试历史</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON (*.json)</translation>
    </message>
    <message>
        <source>Exported %1 results to %2</source>
        <translation>已将 %1 条结果导出到 %2</translation>
    </message>
    <message>
        <source>Running %1: run %2 of %3…</source>
        <translation>正在运行 %1：第 %2 / %3 次…</translation>
    </message>
    <message>
        <source>%1: prefill %2 tok/s, decode %3 tok/s</source>
        <translation>%1：预填充 %2 词元/秒，解码 %3 词元/秒</translation>
    </message>
    <message>
        <source>%1 failed: %2 %3</source>
        <translation>%1 失败：%2 %3</translation>
    </message>
    <message>
        <source>No model is loaded.</source>
        <translation>未加载模型。</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <source>Prefill</source>
        <translation>预填充</translation>
    </message>
    <message>
        <source>Decode</source>
        <translation>解码</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>no runs yet</source>
        <translation>尚无运行</translation>
    </message>
    <message>
        <source>tok/s</source>
        <translation>词元/秒</translation>
    </message>
    <message>
        <source>% of expert lookups</source>
        <translation>专家查询占比 %</translation>
    </message>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>Benchmark arms</source>
        <translation>基准测试组</translation>
    </message>
    <message>
        <source>Benchmark history</source>
        <translation>基准测试历史</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::CacheView</name>
    <message>
        <source>&amp;Warm selected layer</source>
        <translation>预热所选层(&amp;W)</translation>
    </message>
    <message>
        <source>Fetch every expert of the selected layer now</source>
        <translation>立即获取所选层的全部专家</translation>
    </message>
    <message>
        <source>Evict down to</source>
        <translation>逐出直到剩余</translation>
    </message>
    <message>
        <source> GB</source>
        <translation> GB</translation>
    </message>
    <message>
        <source>&amp;Evict</source>
        <translation>逐出(&amp;E)</translation>
    </message>
    <message>
        <source>Punch holes for the least recently used experts until the cache is this small</source>
        <translation>为最久未使用的专家打洞释放空间，直到缓存缩小到此大小</translation>
    </message>
    <message>
        <source>Where experts came from</source>
        <translation>专家来源</translation>
    </message>
    <message>
        <source>Tier</source>
        <translation>层级</translation>
    </message>
    <message>
        <source>Lookups</source>
        <translation>查询次数</translation>
    </message>
    <message>
        <source>Share</source>
        <translation>占比</translation>
    </message>
    <message>
        <source>Disk usage</source>
        <translation>磁盘占用</translation>
    </message>
    <message>
        <source>Part</source>
        <translation>部分</translation>
    </message>
    <message>
        <source>On disk</source>
        <translation>磁盘上</translation>
    </message>
    <message>
        <source>Files</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>&amp;Refresh</source>
        <translation>刷新(&amp;R)</translation>
    </message>
    <message>
        <source>Warming layer %1…</source>
        <translation>正在预热第 %1 层…</translation>
    </message>
    <message>
        <source>Evicting…</source>
        <translation>正在逐出…</translation>
    </message>
    <message>
        <source>%1 — %2</source>
        <translation>%1 — %2</translation>
    </message>
    <message>
        <source>No model is loaded.</source>
        <translation>未加载模型。</translation>
    </message>
    <message>
        <source>Streaming install: %1 of %2 experts cached, %3 of a %4 cap (%5 per expert). Experts not cached are fetched from the Hub on first use.</source>
        <translation>流式安装：已缓存 %2 个专家中的 %1 个，占用 %3，上限 %4（每个专家 %5）。未缓存的专家在首次使用时从 Hub 获取。</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>不适用</translation>
    </message>
    <message>
        <source>VRAM cache</source>
        <translation>显存缓存</translation>
    </message>
    <message>
        <source>RAM cache</source>
        <translation>内存缓存</translation>
    </message>
    <message>
        <source>Local disk</source>
        <translation>本地磁盘</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>%1 allocated of %2 in file sizes (sparse files)</source>
        <translation>文件大小 %2，实际占用 %1（稀疏文件）</translation>
    </message>
    <message>
        <source>Total</source>
        <translation>合计</translation>
    </message>
    <message>
        <source>Free on this disk</source>
        <translation>此磁盘可用空间</translation>
    </message>
    <message>
        <source>Each of the %1 lookups counts once, in the fastest tier that served it. Experts fetched from the network: %2 (Warm and prefetch included).</source>
        <translation>%1 次查找中的每一次只计一次，计入提供它的最快层级。从网络获取的专家：%2（含预热和预取）。</translation>
    </message>
    <message>
        <source>Experts per layer: where they are, how much they are used</source>
        <translation>每层专家：所在位置与使用频率</translation>
    </message>
    <message>
        <source>stronger = looked up more often</source>
        <translation>颜色越深 = 查询越频繁</translation>
    </message>
    <message>
        <source>stronger = used more recently</source>
        <translation>颜色越深 = 最近使用</translation>
    </message>
    <message>
        <source>this install keeps no use counts (the RAM expert cache does)</source>
        <translation>此安装不记录使用次数（RAM 专家缓存会记录）</translation>
    </message>
    <message>
        <source>Every expert of the %1 layers is in VRAM. Source: %2</source>
        <translation>全部 %1 层的专家都在显存中。来源：%2</translation>
    </message>
    <message>
        <source>Full install with the RAM expert cache: %1 of %2 experts in RAM (%3 of %4), the rest read from local disk when used.</source>
        <translation>完整安装并启用 RAM 专家缓存：%2 个专家中有 %1 个在内存中（%4 中的 %3），其余在使用时从本地磁盘读取。</translation>
    </message>
    <message>
        <source>Full install: all %1 experts of each of %2 layers are read from local disk through the page cache. Source: %3</source>
        <translation>完整安装：%2 层中每层的全部 %1 个专家经页缓存从本地磁盘读取。来源：%3</translation>
    </message>
    <message>
        <source>Verified against the Hub: %1 of %2 shards; unverified: %3 on disk (a shard is checked when it is complete; deltafin cache verify --fetch checks them all).</source>
        <translation>已与 Hub 校验：%2 个分片中的 %1 个；未校验：磁盘上 %3（分片完整时即校验；deltafin cache verify --fetch 校验全部）。</translation>
    </message>
    <message>
        <source>GPU session: %1 experts in the VRAM tier&apos;s %2 slots now; below it:</source>
        <translation>GPU 会话：VRAM 层的 %2 个槽位中现有 %1 个专家；其下：</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ChatView</name>
    <message>
        <source>&amp;New chat</source>
        <translation>新对话(&amp;N)</translation>
    </message>
    <message>
        <source>Conversations</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Delete chat</source>
        <translation>删除对话</translation>
    </message>
    <message>
        <source>Ask K3 anything. Ctrl+Enter sends.</source>
        <translation>向 K3 提任何问题。Ctrl+Enter 发送。</translation>
    </message>
    <message>
        <source>Message K3…</source>
        <translation>给 K3 发消息…</translation>
    </message>
    <message>
        <source>Message</source>
        <translation>消息</translation>
    </message>
    <message>
        <source>&amp;Think first</source>
        <translation>先思考(&amp;T)</translation>
    </message>
    <message>
        <source>Let K3 reason before it answers; the reasoning is shown collapsed</source>
        <translation>让 K3 先推理再回答；推理过程默认折叠显示</translation>
    </message>
    <message>
        <source>S&amp;top</source>
        <translation>停止(&amp;T)</translation>
    </message>
    <message>
        <source>&amp;Send</source>
        <translation>发送(&amp;S)</translation>
    </message>
    <message>
        <source>%1 — %2</source>
        <translation>%1 — %2</translation>
    </message>
    <message>
        <source>Untitled</source>
        <translation>未命名</translation>
    </message>
    <message>
        <source>Search chats (Ctrl+F)</source>
        <translation>搜索对话（Ctrl+F）</translation>
    </message>
    <message>
        <source>Search chats</source>
        <translation>搜索对话</translation>
    </message>
    <message>
        <source>More</source>
        <translation>更多</translation>
    </message>
    <message>
        <source>More chat actions</source>
        <translation>更多对话操作</translation>
    </message>
    <message>
        <source>&amp;Rename</source>
        <translation>重命名(&amp;R)</translation>
    </message>
    <message>
        <source>Export as &amp;Markdown…</source>
        <translation>导出为 &amp;Markdown…</translation>
    </message>
    <message>
        <source>Export as &amp;JSON…</source>
        <translation>导出为 &amp;JSON…</translation>
    </message>
    <message>
        <source>&amp;Import…</source>
        <translation>导入(&amp;I)…</translation>
    </message>
    <message>
        <source>Transcript</source>
        <translation>对话记录</translation>
    </message>
    <message>
        <source>Chat settings</source>
        <translation>对话设置</translation>
    </message>
    <message>
        <source>This chat&apos;s system prompt, sampling and reasoning effort</source>
        <translation>此对话的系统提示词、采样与推理强度</translation>
    </message>
    <message>
        <source>Stop the reply (Esc)</source>
        <translation>停止回复（Esc）</translation>
    </message>
    <message>
        <source>&lt;b&gt;This chat&lt;/b&gt;</source>
        <translation>&lt;b&gt;此对话&lt;/b&gt;</translation>
    </message>
    <message>
        <source>S&amp;ystem prompt:</source>
        <translation>系统提示词(&amp;Y)：</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>Instructions K3 follows in this chat</source>
        <translation>K3 在此对话中遵循的指令</translation>
    </message>
    <message>
        <source>0 (greedy)</source>
        <translation>0（贪心）</translation>
    </message>
    <message>
        <source>0 always picks the most likely token; higher values sample more freely</source>
        <translation>0 总是选择概率最高的词元；数值越高采样越自由</translation>
    </message>
    <message>
        <source>T&amp;emperature:</source>
        <translation>温度(&amp;E)：</translation>
    </message>
    <message>
        <source>Sample only from the most likely tokens that together have this probability</source>
        <translation>只从累计概率达到此值的最可能词元中采样</translation>
    </message>
    <message>
        <source>To&amp;p-p:</source>
        <translation>To&amp;p-p：</translation>
    </message>
    <message>
        <source>The same seed and settings give the same reply</source>
        <translation>相同的种子和设置会得到相同的回复</translation>
    </message>
    <message>
        <source>See&amp;d:</source>
        <translation>种子(&amp;D)：</translation>
    </message>
    <message>
        <source>Model default</source>
        <translation>模型默认</translation>
    </message>
    <message>
        <source>Low</source>
        <translation>低</translation>
    </message>
    <message>
        <source>High</source>
        <translation>高</translation>
    </message>
    <message>
        <source>Max</source>
        <translation>最高</translation>
    </message>
    <message>
        <source>How long K3 reasons with &quot;Think first&quot; on</source>
        <translation>开启“先思考”时 K3 推理的时长</translation>
    </message>
    <message>
        <source>Thinking e&amp;ffort:</source>
        <translation>思考强度(&amp;F)：</translation>
    </message>
    <message>
        <source>Wait for the reply to finish, then import.</source>
        <translation>请等待回复完成后再导入。</translation>
    </message>
    <message>
        <source>Export as Markdown</source>
        <translation>导出为 Markdown</translation>
    </message>
    <message>
        <source>Export as JSON</source>
        <translation>导出为 JSON</translation>
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
        <translation>导出失败</translation>
    </message>
    <message>
        <source>Import a chat</source>
        <translation>导入对话</translation>
    </message>
    <message>
        <source>Chats (*.md *.json);;All files (*)</source>
        <translation>对话 (*.md *.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Import failed</source>
        <translation>导入失败</translation>
    </message>
    <message numerus="yes">
        <source>%1 · %n message(s) · F2 renames</source>
        <translation>
            <numerusform>%1 · %n 条消息 · F2 重命名</numerusform>
        </translation>
    </message>
    <message>
        <source>Ask K3 anything. Enter sends, Shift+Enter starts a new line.</source>
        <translation>向 K3 提任何问题。Enter 发送，Shift+Enter 换行。</translation>
    </message>
    <message>
        <source>Send (Enter)</source>
        <translation>发送（Enter）</translation>
    </message>
    <message>
        <source>Send (Ctrl+Enter)</source>
        <translation>发送（Ctrl+Enter）</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ConversationStore</name>
    <message>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <source>Cannot read %1: %2</source>
        <translation>无法读取 %1：%2</translation>
    </message>
    <message>
        <source>%1 was damaged (%2); it was kept as %1.broken</source>
        <translation>%1 已损坏（%2）；已保留为 %1.broken</translation>
    </message>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>System</source>
        <translation>系统</translation>
    </message>
    <message>
        <source>K3</source>
        <translation>K3</translation>
    </message>
    <message>
        <source>System prompt: %1</source>
        <translation>系统提示词：%1</translation>
    </message>
    <message>
        <source>There is no such conversation.</source>
        <translation>没有这个对话。</translation>
    </message>
    <message>
        <source>Unknown export format &apos;%1&apos; (markdown or json).</source>
        <translation>未知的导出格式“%1”（markdown 或 json）。</translation>
    </message>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>%1 is not a conversation exported by Deltafin Studio (Markdown or JSON).</source>
        <translation>%1 不是 Deltafin Studio 导出的对话（Markdown 或 JSON）。</translation>
    </message>
    <message>
        <source>Tool result: %1</source>
        <translation>工具结果：%1</translation>
    </message>
    <message>
        <source>Called</source>
        <translation>已调用</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::LocalEngineWorker</name>
    <message>
        <source>the GPU session did not start: %1</source>
        <translation>GPU 会话未能启动：%1</translation>
    </message>
    <message>
        <source>check the model folder in Settings</source>
        <translation>请在设置中检查模型文件夹</translation>
    </message>
    <message>
        <source>no model is loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <source>run the setup wizard or choose a model folder in Settings</source>
        <translation>请运行安装向导，或在设置中选择模型文件夹</translation>
    </message>
    <message>
        <source>the benchmark was stopped</source>
        <translation>基准测试已停止</translation>
    </message>
    <message>
        <source>Layer %1 is cached</source>
        <translation>第 %1 层已缓存</translation>
    </message>
    <message>
        <source>Freed %1 bytes</source>
        <translation>已释放 %1 字节</translation>
    </message>
    <message>
        <source>off in Settings</source>
        <translation>已在设置中关闭</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ExpertHeatMap</name>
    <message>
        <source>VRAM</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>disk</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>not fetched</source>
        <translation>未获取</translation>
    </message>
    <message>
        <source>Experts per layer by tier</source>
        <translation>按层级显示的每层专家</translation>
    </message>
    <message>
        <source>%1 layers of %2 experts: %3 in VRAM, %4 in RAM, %5 on disk, %6 not fetched</source>
        <translation>%1 层，每层 %2 个专家：显存 %3，内存 %4，磁盘 %5，未获取 %6</translation>
    </message>
    <message>
        <source>Layer %1: %2</source>
        <translation>第 %1 层：%2</translation>
    </message>
    <message>
        <source>Expert %1: %2</source>
        <translation>专家 %1：%2</translation>
    </message>
    <message numerus="yes">
        <source>, used %n time(s)</source>
        <translation>
            <numerusform>，使用 %n 次</numerusform>
        </translation>
    </message>
    <message>
        <source>No model is loaded</source>
        <translation>未加载模型</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::InstallJob</name>
    <message>
        <source>Queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Pausing…</source>
        <translation>正在暂停…</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>正在取消…</translation>
    </message>
    <message>
        <source>Cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>Started</source>
        <translation>已开始</translation>
    </message>
    <message>
        <source>Finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Paused; the bytes on disk are kept</source>
        <translation>已暂停；磁盘上的数据会保留</translation>
    </message>
    <message>
        <source>Cancelled; verified files are kept, run setup again to finish</source>
        <translation>已取消；已校验的文件会保留，再次运行安装即可完成</translation>
    </message>
    <message>
        <source>the install stopped</source>
        <translation>安装已中止</translation>
    </message>
    <message>
        <source>Failed: %1</source>
        <translation>失败：%1</translation>
    </message>
    <message>
        <source>Resuming</source>
        <translation>正在继续</translation>
    </message>
    <message>
        <source>Finished: %1</source>
        <translation>完成：%1</translation>
    </message>
    <message>
        <source>the upgrade stopped</source>
        <translation>升级已停止</translation>
    </message>
    <message>
        <source>the app quit while this upgrade was running</source>
        <translation>升级运行期间应用已退出</translation>
    </message>
    <message>
        <source>run it again with Resume: an upgrade that had finished reports that it is up to date</source>
        <translation>点击“继续”重新运行：已完成的升级会报告已是最新</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::JobsView</name>
    <message>
        <source>Job</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <source>Time left</source>
        <translation>剩余时间</translation>
    </message>
    <message>
        <source>No jobs yet. Setup, upgrades and add-on installs run here in the background.</source>
        <translation>暂无任务。安装、升级和附加组件安装会在此后台运行。</translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation>暂停(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>继续(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Cancel job</source>
        <translation>取消任务(&amp;C)</translation>
    </message>
    <message>
        <source>Re&amp;move from list</source>
        <translation>从列表中移除(&amp;M)</translation>
    </message>
    <message>
        <source>Job log</source>
        <translation>任务日志</translation>
    </message>
    <message>
        <source> · %1 · %2 left</source>
        <translation> · %1 · 剩余 %2</translation>
    </message>
    <message>
        <source> · file %1 of %2</source>
        <translation> · 第 %1 / %2 个文件</translation>
    </message>
    <message>
        <source>&lt;b&gt;What failed:&lt;/b&gt; %1&lt;br&gt;&lt;b&gt;What to do:&lt;/b&gt; %2</source>
        <translation>&lt;b&gt;失败原因：&lt;/b&gt;%1&lt;br&gt;&lt;b&gt;解决办法：&lt;/b&gt;%2</translation>
    </message>
    <message>
        <source>see the log below</source>
        <translation>见下方日志</translation>
    </message>
    <message>
        <source>An upgrade runs git and CMake to the end of each step</source>
        <translation>升级会让 git 和 CMake 完成每一步</translation>
    </message>
    <message>
        <source>Jobs</source>
        <translation>任务</translation>
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
        <translation>对话(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Jobs</source>
        <translation>任务(&amp;J)</translation>
    </message>
    <message>
        <source>C&amp;ache</source>
        <translation>缓存(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;Benchmark</source>
        <translation>基准测试(&amp;B)</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;New chat</source>
        <translation>新对话(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Setup wizard…</source>
        <translation>安装向导(&amp;S)…</translation>
    </message>
    <message>
        <source>S&amp;ettings…</source>
        <translation>设置(&amp;E)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;About Deltafin</source>
        <translation>关于 Deltafin(&amp;A)</translation>
    </message>
    <message>
        <source>About Deltafin</source>
        <translation>关于 Deltafin</translation>
    </message>
    <message>
        <source>&lt;b&gt;Deltafin Studio %1&lt;/b&gt;&lt;p&gt;The full Kimi K3 on one machine: every weight exactly as shipped, streamed from disk into RAM and VRAM caches.&lt;/p&gt;</source>
        <translation>&lt;b&gt;Deltafin Studio %1&lt;/b&gt;&lt;p&gt;在一台机器上运行完整的 Kimi K3：每个权重都与发布时完全一致，从磁盘流式载入内存和显存缓存。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Install &amp;add-ons…</source>
        <translation>安装附加组件(&amp;A)…</translation>
    </message>
    <message>
        <source>&amp;Upgrade Deltafin…</source>
        <translation>升级 Deltafin(&amp;U)…</translation>
    </message>
    <message>
        <source>&amp;Import chat…</source>
        <translation>导入对话(&amp;I)…</translation>
    </message>
    <message>
        <source>Export chat as &amp;Markdown…</source>
        <translation>将对话导出为 &amp;Markdown…</translation>
    </message>
    <message>
        <source>Export chat as &amp;JSON…</source>
        <translation>将对话导出为 &amp;JSON…</translation>
    </message>
    <message>
        <source>Pages</source>
        <translation>页面</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::MessageWidget</name>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>K3</source>
        <translation>K3</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy this message as Markdown</source>
        <translation>以 Markdown 复制此消息</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>Replace this answer with a new one</source>
        <translation>用新回答替换此回答</translation>
    </message>
    <message>
        <source>Reasoning</source>
        <translation>推理过程</translation>
    </message>
    <message>
        <source>Prompt: %1 tokens at %2 tok/s; total %3 s</source>
        <translation>提示：%1 个词元，%2 词元/秒；总计 %3 秒</translation>
    </message>
    <message>
        <source>Copy this message</source>
        <translation>复制此消息</translation>
    </message>
    <message>
        <source>Regenerate this answer</source>
        <translation>重新生成此回答</translation>
    </message>
    <message>
        <source>Show the reasoning</source>
        <translation>显示推理过程</translation>
    </message>
    <message>
        <source>Your message</source>
        <translation>你的消息</translation>
    </message>
    <message>
        <source>K3&apos;s answer</source>
        <translation>K3 的回答</translation>
    </message>
    <message>
        <source>Tool result · %1</source>
        <translation>工具结果 · %1</translation>
    </message>
    <message>
        <source>System</source>
        <translation>系统</translation>
    </message>
    <message>
        <source>The result of call %1</source>
        <translation>调用 %1 的结果</translation>
    </message>
    <message>
        <source>Tool result</source>
        <translation>工具结果</translation>
    </message>
    <message>
        <source>System message</source>
        <translation>系统消息</translation>
    </message>
    <message>
        <source>Called %1</source>
        <translation>已调用 %1</translation>
    </message>
    <message>
        <source>Tool call: %1</source>
        <translation>工具调用：%1</translation>
    </message>
    <message>
        <source>Call %1</source>
        <translation>调用 %1</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::PlacementBar</name>
    <message>
        <source>No placement plan yet.</source>
        <translation>尚无放置计划。</translation>
    </message>
    <message>
        <source>No placement plan: %1</source>
        <translation>无放置计划：%1</translation>
    </message>
    <message>
        <source>Plan: %1 VRAM · %2 RAM · %3 read from disk — predicted %4 tok/s (%5-bound)</source>
        <translation>计划：%1 VRAM · %2 内存 · %3 从磁盘读取 — 预测 %4 tok/s（受 %5 限制）</translation>
    </message>
    <message>
        <source>, measured %1 tok/s</source>
        <translation>，实测 %1 tok/s</translation>
    </message>
    <message>
        <source>, not measured yet</source>
        <translation>，尚未实测</translation>
    </message>
    <message>
        <source>Where the placement planner puts the model&apos;s bytes on this machine (as `deltafin plan` prints it). Rates: %1</source>
        <translation>放置规划器在本机上如何安置模型的字节（与 `deltafin plan` 的输出相同）。速率：%1</translation>
    </message>
    <message>
        <source>Placement plan</source>
        <translation>放置计划</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::RemoteChatBackend</name>
    <message>
        <source>Remote</source>
        <translation>远程</translation>
    </message>
    <message>
        <source>the endpoint address %1 is not a URL</source>
        <translation>端点地址 %1 不是 URL</translation>
    </message>
    <message>
        <source>enter an address such as http://127.0.0.1:8080/v1 in Settings</source>
        <translation>请在设置中输入类似 http://127.0.0.1:8080/v1 的地址</translation>
    </message>
    <message>
        <source>cannot reach %1: %2</source>
        <translation>无法连接 %1：%2</translation>
    </message>
    <message>
        <source>check that the server runs and the address ends in /v1</source>
        <translation>请确认服务器正在运行且地址以 /v1 结尾</translation>
    </message>
    <message>
        <source>%1 lists no models</source>
        <translation>%1 未列出任何模型</translation>
    </message>
    <message>
        <source>enter the model name in Settings</source>
        <translation>请在设置中输入模型名称</translation>
    </message>
    <message>
        <source>the server answered %1: %2</source>
        <translation>服务器返回 %1：%2</translation>
    </message>
    <message>
        <source>check the endpoint and model in Settings</source>
        <translation>请在设置中检查端点和模型</translation>
    </message>
    <message>
        <source>refusing to send the API key over plain http to %1: anyone on the way could read it</source>
        <translation>拒绝通过明文 http 向 %1 发送 API 密钥：途中任何人都能读到它</translation>
    </message>
    <message>
        <source>use an https address, or an SSH tunnel to 127.0.0.1</source>
        <translation>请使用 https 地址，或通往 127.0.0.1 的 SSH 隧道</translation>
    </message>
    <message>
        <source>the server sent more than %1 MiB without ending an event</source>
        <translation>服务器发送了超过 %1 MiB 却未结束一个事件</translation>
    </message>
    <message>
        <source>no data for %1 s</source>
        <translation>%1 秒无数据</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::ServerProcess</name>
    <message>
        <source>Server running: %1</source>
        <translation>服务器运行中：%1</translation>
    </message>
    <message>
        <source>The server could not run: %1</source>
        <translation>服务器无法运行：%1</translation>
    </message>
    <message>
        <source>Server stopped</source>
        <translation>服务器已停止</translation>
    </message>
    <message>
        <source>The server exited (%1): %2</source>
        <translation>服务器已退出（%1）：%2</translation>
    </message>
    <message>
        <source>The server could not start on the GPU (%1); starting it on the CPU</source>
        <translation>服务器无法在 GPU 上启动（%1）；改为在 CPU 上启动</translation>
    </message>
    <message>
        <source>Server listening on %1</source>
        <translation>服务器正在监听 %1</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>&amp;Browse…</source>
        <translation>浏览(&amp;B)…</translation>
    </message>
    <message>
        <source>Model folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>&amp;Model folder:</source>
        <translation>模型文件夹(&amp;M)：</translation>
    </message>
    <message>
        <source>Use the bundled demo model while K3 is not installed</source>
        <translation>在未安装 K3 时使用附带的演示模型</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>CUDA GPU</source>
        <translation>CUDA GPU</translation>
    </message>
    <message>
        <source>&amp;Device:</source>
        <translation>设备(&amp;D)：</translation>
    </message>
    <message>
        <source> GiB</source>
        <translation> GiB</translation>
    </message>
    <message>
        <source>&amp;RAM expert cache:</source>
        <translation>内存专家缓存(&amp;R)：</translation>
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
        <translation>草稿模型只负责提前猜测；K3 会校验每个词元，因此回答不会改变</translation>
    </message>
    <message>
        <source>D&amp;rafter:</source>
        <translation>草稿模型(&amp;R)：</translation>
    </message>
    <message>
        <source>Longest &amp;reply (tokens):</source>
        <translation>最长回复（词元）(&amp;R)：</translation>
    </message>
    <message>
        <source>Local server</source>
        <translation>本地服务器</translation>
    </message>
    <message>
        <source>Run the OpenAI-compatible server (deltafin serve)</source>
        <translation>运行兼容 OpenAI 的服务器（deltafin serve）</translation>
    </message>
    <message>
        <source>&amp;Port:</source>
        <translation>端口(&amp;P)：</translation>
    </message>
    <message>
        <source>Remote engine</source>
        <translation>远程引擎</translation>
    </message>
    <message>
        <source>Chat with an OpenAI-compatible endpoint instead of this machine</source>
        <translation>改为与兼容 OpenAI 的端点对话，而不是本机</translation>
    </message>
    <message>
        <source>&amp;Address:</source>
        <translation>地址(&amp;A)：</translation>
    </message>
    <message>
        <source>first model the server lists</source>
        <translation>服务器列出的第一个模型</translation>
    </message>
    <message>
        <source>Mo&amp;del:</source>
        <translation>模型(&amp;D)：</translation>
    </message>
    <message>
        <source>API &amp;key:</source>
        <translation>API 密钥(&amp;K)：</translation>
    </message>
    <message>
        <source>&amp;Language:</source>
        <translation>语言(&amp;L)：</translation>
    </message>
    <message>
        <source>Through the page cache (memory-mapped shards)</source>
        <translation>经由页缓存（内存映射分片）</translation>
    </message>
    <message>
        <source>Engine RAM cache over direct disk reads</source>
        <translation>引擎内存缓存，直接读取磁盘</translation>
    </message>
    <message>
        <source>&amp;Expert reads:</source>
        <translation>专家读取(&amp;E)：</translation>
    </message>
    <message>
        <source>Automatic (free memory less a margin)</source>
        <translation>自动（空闲内存减去余量）</translation>
    </message>
    <message>
        <source>Bypass the page cache (O_DIRECT), so experts are not held twice</source>
        <translation>绕过页缓存（O_DIRECT），避免专家在内存中存两份</translation>
    </message>
    <message>
        <source>Frequency with decay (LFU)</source>
        <translation>带衰减的频率（LFU）</translation>
    </message>
    <message>
        <source>Least recently used (LRU)</source>
        <translation>最近最少使用（LRU）</translation>
    </message>
    <message>
        <source>Frequency seeded from the saved heat map</source>
        <translation>以保存的热度图初始化的频率</translation>
    </message>
    <message>
        <source>E&amp;viction:</source>
        <translation>淘汰策略(&amp;V)：</translation>
    </message>
    <message>
        <source>Streaming installs keep experts in their own capped stream cache (see the Cache page); the RAM cache applies to full installs. On the GPU the experts also live in a VRAM tier sized from the GPU&apos;s free memory (all of them when they fit).</source>
        <translation>流式安装把专家保存在自己有上限的流式缓存中（见“缓存”页）；内存缓存适用于完整安装。在 GPU 上，专家还保存在显存层中，其大小按 GPU 的空闲显存确定（放得下时全部放入）。</translation>
    </message>
    <message>
        <source>Automatic (DSpark if installed, else n-gram)</source>
        <translation>自动（已安装则用 DSpark，否则用 n-gram）</translation>
    </message>
    <message>
        <source>Off (plain decoding)</source>
        <translation>关闭（普通解码）</translation>
    </message>
    <message>
        <source>n-gram (no model)</source>
        <translation>n-gram（无需模型）</translation>
    </message>
    <message>
        <source>any free port</source>
        <translation>任意空闲端口</translation>
    </message>
    <message>
        <source>Enter sends a message, Shift+Enter starts a new line (off: Ctrl+Enter sends)</source>
        <translation>Enter 发送消息，Shift+Enter 换行（关闭时：Ctrl+Enter 发送）</translation>
    </message>
    <message>
        <source>The key is kept in %1, not in the settings file.</source>
        <translation>密钥保存在 %1 中，而不在设置文件里。</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::SetupWizard</name>
    <message>
        <source>Set up Deltafin</source>
        <translation>安装 Deltafin</translation>
    </message>
    <message>
        <source>Welcome to Deltafin</source>
        <translation>欢迎使用 Deltafin</translation>
    </message>
    <message>
        <source>Deltafin runs the full Kimi K3 on this machine, every weight exactly as Moonshot shipped it. The next pages download it: either all of it (1.56 TB), or a streaming install that fetches experts when they are first used.</source>
        <translation>Deltafin 在本机运行完整的 Kimi K3，每个权重都与 Moonshot 发布时完全一致。接下来的页面会下载它：可以全部下载（1.56 TB），也可以选择流式安装，在首次使用专家时再获取。</translation>
    </message>
    <message>
        <source>Not ready to download? The bundled demo model is a very small K3 in K3&apos;s exact format, trained on the King James Bible, so you can try every part of the app right now. It is not Kimi K3: it answers in the Bible&apos;s English.</source>
        <translation>还不想下载？附带的演示模型是一个很小的 K3，格式与 K3 完全相同，在英王钦定本《圣经》上训练，你现在就可以试用应用的所有功能。它不是 Kimi K3：它用《圣经》的英语回答。</translation>
    </message>
    <message>
        <source>Try the &amp;demo model</source>
        <translation>试用演示模型(&amp;D)</translation>
    </message>
    <message>
        <source>How should K3 be installed?</source>
        <translation>如何安装 K3？</translation>
    </message>
    <message>
        <source>&amp;Full install: every file from the Hub, verified (about 1.56 TB)</source>
        <translation>完整安装(&amp;F)：从 Hub 下载并校验每个文件（约 1.56 TB）</translation>
    </message>
    <message>
        <source>&amp;Streaming install: configuration and non-expert weights now (about 114 GB); experts are fetched on first use into a capped cache</source>
        <translation>流式安装(&amp;S)：现在下载配置和非专家权重（约 114 GB）；专家在首次使用时获取到有上限的缓存中</translation>
    </message>
    <message>
        <source>&amp;Browse…</source>
        <translation>浏览(&amp;B)…</translation>
    </message>
    <message>
        <source>Model folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>&amp;Model folder:</source>
        <translation>模型文件夹(&amp;M)：</translation>
    </message>
    <message>
        <source>&amp;Hub address:</source>
        <translation>Hub 地址(&amp;H)：</translation>
    </message>
    <message>
        <source>Free on this disk: %1</source>
        <translation>此磁盘可用：%1</translation>
    </message>
    <message>
        <source>Add-ons</source>
        <translation>附加组件</translation>
    </message>
    <message>
        <source>D&amp;Spark drafter (recommended: faster replies, identical answers)</source>
        <translation>DSpark 草稿模型(&amp;S)（推荐：回复更快，答案完全相同）</translation>
    </message>
    <message>
        <source>&amp;Qwen3 0.6B and 1.7B drafters</source>
        <translation>Qwen3 0.6B 和 1.7B 草稿模型(&amp;Q)</translation>
    </message>
    <message>
        <source>Every repository is installed at the revision Deltafin was tested with:</source>
        <translation>每个仓库都会安装 Deltafin 测试过的版本：</translation>
    </message>
    <message>
        <source>Part</source>
        <translation>部分</translation>
    </message>
    <message>
        <source>Repository</source>
        <translation>仓库</translation>
    </message>
    <message>
        <source>Revision</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Disk space</source>
        <translation>磁盘空间</translation>
    </message>
    <message>
        <source>Files</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>On disk</source>
        <translation>磁盘上</translation>
    </message>
    <message>
        <source>To download</source>
        <translation>待下载</translation>
    </message>
    <message>
        <source>&amp;Install in the background</source>
        <translation>在后台安装(&amp;I)</translation>
    </message>
    <message>
        <source>Asking the Hub for the file lists…</source>
        <translation>正在向 Hub 查询文件列表…</translation>
    </message>
    <message>
        <source>The plan failed: %1</source>
        <translation>规划失败：%1</translation>
    </message>
    <message>
        <source>Needed: %1 to download (%2 on disk in all). Free: %3.</source>
        <translation>需要：下载 %1（磁盘上共 %2）。可用：%3。</translation>
    </message>
    <message>
        <source> Expert cache cap: %1.</source>
        <translation> 专家缓存上限：%1。</translation>
    </message>
    <message>
        <source> This does not fit: choose another folder or a streaming install.</source>
        <translation> 空间不足：请选择其他文件夹或流式安装。</translation>
    </message>
    <message>
        <source>Streaming install of Kimi K3</source>
        <translation>Kimi K3 流式安装</translation>
    </message>
    <message>
        <source>Full install of Kimi K3</source>
        <translation>Kimi K3 完整安装</translation>
    </message>
    <message>
        <source>K3 already installed? Add the drafters (DSpark, Qwen3) to it without touching the model.</source>
        <translation>已安装 K3？只添加草稿模型（DSpark、Qwen3），不改动模型本身。</translation>
    </message>
    <message>
        <source>Install only &amp;add-ons…</source>
        <translation>仅安装附加组件(&amp;A)…</translation>
    </message>
    <message>
        <source>The add-ons go into this K3 install&apos;s addons folder; the model itself is not touched.</source>
        <translation>附加组件安装到此 K3 安装的 addons 文件夹；模型本身不受影响。</translation>
    </message>
    <message>
        <source>This folder holds no K3 install yet. The drafters are installed anyway, but they only help once K3 is installed here.</source>
        <translation>此文件夹中还没有 K3 安装。草稿模型仍会安装，但只有在这里安装 K3 后才有用。</translation>
    </message>
    <message>
        <source>Which install gets the add-ons?</source>
        <translation>为哪个安装添加附加组件？</translation>
    </message>
    <message>
        <source>Install add-ons</source>
        <translation>安装附加组件</translation>
    </message>
    <message>
        <source>no add-on is chosen</source>
        <translation>未选择附加组件</translation>
    </message>
    <message>
        <source>Choose DSpark, Qwen3 or both on the previous page.</source>
        <translation>请在上一页选择 DSpark、Qwen3 或两者。</translation>
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
        <translation>附加组件：%1</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::StatusPanel</name>
    <message>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <source>%1 · %2</source>
        <translation>%1 · %2</translation>
    </message>
    <message>
        <source>%1 tok/s</source>
        <translation>%1 词元/秒</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>不适用</translation>
    </message>
    <message>
        <source>Experts: %1</source>
        <translation>专家：%1</translation>
    </message>
    <message>
        <source>Drafter: %1</source>
        <translation>草稿模型：%1</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>Why CPU?</source>
        <translation>为何用 CPU？</translation>
    </message>
    <message>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <source>Expert lookups per tier</source>
        <translation>各层级的专家查询</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>Disk –</source>
        <translation>磁盘 –</translation>
    </message>
    <message>
        <source>Loading…</source>
        <translation>加载中…</translation>
    </message>
    <message>
        <source>Loading… %1</source>
        <translation>加载中… %1</translation>
    </message>
    <message>
        <source>%1 · demo model</source>
        <translation>%1 · 演示模型</translation>
    </message>
    <message>
        <source> · %1</source>
        <translation> · %1</translation>
    </message>
    <message>
        <source>%1, demo model (trained on the King James Bible)</source>
        <translation>%1，演示模型（在英王钦定本《圣经》上训练）</translation>
    </message>
    <message>
        <source>%1, %2</source>
        <translation>%1，%2</translation>
    </message>
    <message>
        <source>Not on the GPU: %1</source>
        <translation>未使用 GPU：%1</translation>
    </message>
    <message>
        <source>%1. Click to open the device settings.</source>
        <translation>%1。点击打开设备设置。</translation>
    </message>
    <message>
        <source>No model</source>
        <translation>无模型</translation>
    </message>
    <message>
        <source>Decode speed of the last reply</source>
        <translation>上一条回复的解码速度</translation>
    </message>
    <message>
        <source>Experts –</source>
        <translation>专家 –</translation>
    </message>
    <message>
        <source>Where expert lookups were served (VRAM, RAM, disk, network); none yet</source>
        <translation>专家查询由何处提供（显存、内存、磁盘、网络）；尚无</translation>
    </message>
    <message>
        <source>VRAM %1</source>
        <translation>显存 %1</translation>
    </message>
    <message>
        <source>RAM %1</source>
        <translation>内存 %1</translation>
    </message>
    <message>
        <source>disk %1</source>
        <translation>磁盘 %1</translation>
    </message>
    <message>
        <source>net %1</source>
        <translation>网络 %1</translation>
    </message>
    <message>
        <source>Experts %1</source>
        <translation>专家 %1</translation>
    </message>
    <message>
        <source>%1 expert lookups since the model was loaded, each counted in the fastest tier that served it:
VRAM %2 · RAM %3 · disk %4 · network %5</source>
        <translation>自加载模型以来共 %1 次专家查询，每次计入提供它的最快层级：
显存 %2 · 内存 %3 · 磁盘 %4 · 网络 %5</translation>
    </message>
    <message>
        <source>%1 free</source>
        <translation>可用 %1</translation>
    </message>
    <message>
        <source>Model folder %1: %2 used, %3 free on its disk</source>
        <translation>模型文件夹 %1：已用 %2，所在磁盘可用 %3</translation>
    </message>
</context>
<context>
    <name>deltafin::gui::UpgradeDialog</name>
    <message>
        <source>Upgrade Deltafin</source>
        <translation>升级 Deltafin</translation>
    </message>
    <message>
        <source>Fetches the git checkout&apos;s upstream, fast-forwards it (never merges or rebases) and rebuilds it with the CMake configuration it was built with, so a CUDA build stays a CUDA build. Models and caches are not touched. A checkout with local changes, a detached HEAD or diverged history is refused, with what to do.</source>
        <translation>获取 git 检出的上游，快进（从不合并或变基），并按原来的 CMake 配置重新构建，因此 CUDA 构建仍是 CUDA 构建。模型和缓存不受影响。有本地修改、分离 HEAD 或历史已分叉的检出会被拒绝，并说明该怎么做。</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Choose a folder</source>
        <translation>选择文件夹</translation>
    </message>
    <message>
        <source>&amp;Source checkout:</source>
        <translation>源码检出(&amp;S)：</translation>
    </message>
    <message>
        <source>B&amp;uild folder:</source>
        <translation>构建文件夹(&amp;U)：</translation>
    </message>
    <message>
        <source>&amp;Only check whether an upgrade is available</source>
        <translation>仅检查是否有可用升级(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Upgrade in the background</source>
        <translation>在后台升级(&amp;U)</translation>
    </message>
    <message>
        <source>Check for a Deltafin upgrade</source>
        <translation>检查 Deltafin 升级</translation>
    </message>
</context>
</TS>
