"""Demo files with Chinese comments (hand-written for babelscore; see DATA_CARD.md)."""
from __future__ import annotations

from engine.data.demo.spec import DemoFile

LANGUAGE = "zh"

FILES = (
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package com.example.util;

public final class NamingUtils {

    private NamingUtils() {
    }

    @@COMMENT@@
    public static String camelToSnake(String name) {
        StringBuilder sb = new StringBuilder(name.length() + 8);
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isUpperCase(c)) {
                boolean prevLower = i > 0 && Character.isLowerCase(name.charAt(i - 1));
                boolean nextLower = i + 1 < name.length() && Character.isLowerCase(name.charAt(i + 1));
                if (i > 0 && (prevLower || nextLower)) {
                    sb.append('_');
                }
                sb.append(Character.toLowerCase(c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
""",
        comment="将驼峰命名的 name 转换为下划线命名，例如 userName 转为 user_name；连续的大写字母视为一个缩写，"
        "所以 parseHTTPResponse 会得到 parse_http_response。",
        paraphrase="将驼峰风格的 name 改写成小写加下划线的形式，如 userName 变成 user_name；多个连续大写字母被当作"
        "缩写整体处理，parseHTTPResponse 得到 parse_http_response。",
        wrong_identifier="将驼峰命名的 sb 转换为下划线命名，例如 userName 转为 user_name；连续的大写字母视为一个缩写，"
        "所以 parseHTTPResponse 会得到 parse_http_response。",
        missing_detail="将驼峰命名的 name 转换为下划线命名，例如 userName 转为 user_name。",
        wrong_statement="将驼峰命名的 name 转换为下划线命名，每个大写字母前都会加下划线，所以 parseHTTPResponse "
        "会得到 parse_h_t_t_p_response。",
        wrong_language="将驼峰 case in name into snake case, for example userName becomes user_name; a run of "
        "capitals is treated as one acronym, so parseHTTPResponse gives parse_http_response.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package com.example.graph;

public class DisjointSet {

    private final int[] parent;
    private final int[] rank;

    public DisjointSet(int n) {
        parent = new int[n];
        rank = new int[n];
        for (int i = 0; i < n; i++) {
            parent[i] = i;
        }
    }

    @@COMMENT@@
    public int find(int x) {
        int root = x;
        while (parent[root] != root) {
            root = parent[root];
        }
        while (parent[x] != root) {
            int next = parent[x];
            parent[x] = root;
            x = next;
        }
        return root;
    }

    // 按秩合并：把矮的树挂到高的树下面，保证树高为 O(log n)。
    public boolean union(int a, int b) {
        int ra = find(a);
        int rb = find(b);
        if (ra == rb) {
            return false;
        }
        if (rank[ra] < rank[rb]) {
            int t = ra;
            ra = rb;
            rb = t;
        }
        parent[rb] = ra;
        if (rank[ra] == rank[rb]) {
            rank[ra]++;
        }
        return true;
    }
}
""",
        comment="并查集的查找操作：返回 x 所在集合的根，并把路径上每个节点的 parent 直接指向根（路径压缩）。"
        "用循环代替递归，避免树很深时栈溢出。",
        paraphrase="并查集的 find：找到 x 所属集合的代表元素，同时将沿途节点直接挂到根上以压缩路径；采用迭代实现，"
        "树再深也不会栈溢出。",
        wrong_identifier="并查集的查找操作：返回 x 所在集合的根，并把路径上每个节点的 rank 直接指向根（路径压缩）。"
        "用循环代替递归，避免树很深时栈溢出。",
        missing_detail="并查集的查找操作：返回 x 所在集合的根。",
        wrong_statement="并查集的查找操作：返回 x 所在集合的根，但不会修改 parent 数组；采用递归实现，因此树很深时"
        "可能栈溢出。",
        wrong_language="并查集 find operation: returns the root of the set that contains x and points every node on "
        "the path straight at the root (path compression), using a loop instead of recursion.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package com.example.config;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

public final class ConfigLoader {

    private ConfigLoader() {
    }

    @@COMMENT@@
    public static Properties load(Path file, Properties defaults) throws IOException {
        Properties props = new Properties(defaults);
        if (!Files.exists(file)) {
            return props;
        }
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            props.load(reader);
        }
        return props;
    }
}
""",
        comment="读取配置文件 file，缺少的键回退到 defaults 中的值。文件不存在时直接返回默认配置而不报错；"
        "文件按 UTF-8 解码，因此配置里可以直接写中文。",
        paraphrase="读取配置文件 file 并以 defaults 作为后备值；如果文件不存在，不会抛出异常，而是返回只含默认值的"
        "配置。内容按 UTF-8 读取，支持中文。",
        wrong_identifier="读取配置文件 file，缺少的键回退到 props 中的值。文件不存在时直接返回默认配置而不报错；"
        "文件按 UTF-8 解码，因此配置里可以直接写中文。",
        missing_detail="读取配置文件 file，缺少的键回退到 defaults 中的值。",
        wrong_statement="读取配置文件 file，缺少的键回退到 defaults 中的值。文件不存在时抛出 IOException；文件按 "
        "ISO-8859-1 解码，中文必须转义。",
        wrong_language="读取配 the configuration from file, falling back to the values in defaults for missing keys. "
        "A missing file returns the defaults instead of failing, and the file is decoded as UTF-8.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package com.example.net;

import java.io.IOException;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;

public final class Retry {

    private Retry() {
    }

    public static <T> T withBackoff(Callable<T> task, int maxAttempts, long baseDelayMs) throws Exception {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1: " + maxAttempts);
        }
        IOException last = null;
        for (int attempt = 0; attempt < maxAttempts; attempt++) {
            try {
                return task.call();
            } catch (IOException e) {
                last = e;
            }
            if (attempt + 1 == maxAttempts) {
                break;
            }
            @@COMMENT@@
            long delay = baseDelayMs << Math.min(attempt, 10);
            Thread.sleep(ThreadLocalRandom.current().nextLong(delay / 2, delay + 1));
        }
        throw last;
    }
}
""",
        comment="指数退避：每次失败后等待时间翻倍，移位次数最多为 10 以防溢出；再在 delay 的一半到全部之间随机取值，"
        "避免大量客户端同时重试。",
        paraphrase="指数退避，每失败一次等待时长加倍（最多左移 10 位，防止溢出），并在 delay/2 到 delay 之间加入"
        "随机抖动，让各个客户端的重试时间错开。",
        wrong_identifier="指数退避：每次失败后等待时间翻倍，移位次数最多为 10 以防溢出；再在 baseDelayMs 的一半到"
        "全部之间随机取值，避免大量客户端同时重试。",
        missing_detail="指数退避：每次失败后等待时间翻倍，然后再重试。",
        wrong_statement="指数退避：每次失败后等待时间固定增加 baseDelayMs 毫秒，呈线性增长，而且等待时间不含任何"
        "随机成分。",
        wrong_language="指数退 backoff: the wait doubles after every failure, with the shift capped at 10 to avoid "
        "overflow, and a random pause between half and all of delay keeps clients from retrying together.",
    ),
    DemoFile(
        program="java",
        style="javadoc",
        source="""\
package com.example.time;

import java.time.LocalDate;
import java.time.Period;

public final class AgeCalculator {

    private AgeCalculator() {
    }

    @@COMMENT@@
    public static int ageOn(LocalDate birthDate, LocalDate today) {
        if (today.isBefore(birthDate)) {
            throw new IllegalArgumentException("today is before birthDate: " + today);
        }
        return Period.between(birthDate, today).getYears();
    }
}
""",
        comment="按周岁计算在 today 这一天的年龄。2 月 29 日出生的人在平年要到 3 月 1 日才长一岁；today 早于 "
        "birthDate 时抛出 IllegalArgumentException。",
        paraphrase="按周岁返回截至 today 的年龄；闰日出生的人在非闰年的 3 月 1 日才增加一岁。如果 today 在 "
        "birthDate 之前，会抛出 IllegalArgumentException。",
        wrong_identifier="按周岁计算在 birthDate 这一天的年龄。2 月 29 日出生的人在平年要到 3 月 1 日才长一岁；"
        "today 早于 birthDate 时抛出 IllegalArgumentException。",
        missing_detail="按周岁计算在 today 这一天的年龄。",
        wrong_statement="按周岁计算在 today 这一天的年龄。2 月 29 日出生的人在平年的 2 月 28 日就长一岁；today "
        "早于 birthDate 时返回负数。",
        wrong_language="按周岁 age in completed years on the date today. Someone born on 29 February only turns a "
        "year older on 1 March in common years; throws IllegalArgumentException if today is before birthDate.",
    ),
    DemoFile(
        program="java",
        style="line",
        source="""\
package com.example.search;

public final class BinarySearch {

    private BinarySearch() {
    }

    /** 返回第一个不小于 target 的元素下标；如果所有元素都小于 target，返回 sorted.length。 */
    public static int lowerBound(int[] sorted, int target) {
        int lo = 0;
        int hi = sorted.length;
        while (lo < hi) {
            @@COMMENT@@
            int mid = (lo + hi) >>> 1;
            if (sorted[mid] < target) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
""",
        comment="无符号右移求中点：即使 lo + hi 溢出成负数，结果仍然正确；搜索区间为左闭右开的 [lo, hi)。",
        paraphrase="无符号右移一位来取中点，这样 lo + hi 超出 int 范围时也不会得到负数下标；区间始终是 [lo, hi)，"
        "不包含右端点。",
        wrong_identifier="无符号右移求中点：即使 lo + hi 溢出成负数，结果仍然正确；搜索区间为左闭右开的 [lo, mid)。",
        missing_detail="无符号右移求中点，搜索区间为 [lo, hi)。",
        wrong_statement="无符号右移求中点，只是比除以 2 更快；当 lo + hi 溢出时会得到负数下标。搜索区间为闭区间 "
        "[lo, hi]。",
        wrong_language="无符号 right shift gives the midpoint: even if lo + hi overflows to a negative int, the "
        "result is still correct; the search range is half open, from lo up to but not including hi.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        @@COMMENT@@
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
""",
        comment="区间已按起点排序，所以只需和 merged 中最后一个区间比较；端点相接的区间（如 (1, 3) 和 (3, 5)）"
        "也视为重叠并合并。",
        paraphrase="区间已经按起点排好序，因此只要看 merged 的最后一项是否重叠；两个区间恰好首尾相接时同样会被"
        "合并成一个。",
        wrong_identifier="区间已按起点排序，所以只需和 intervals 中最后一个区间比较；端点相接的区间（如 (1, 3) 和 "
        "(3, 5)）也视为重叠并合并。",
        missing_detail="区间已按起点排序，所以只需和 merged 中最后一个区间比较。",
        wrong_statement="区间已按终点排序，所以需要和 merged 中的所有区间逐一比较；端点相接的区间不会合并。",
        wrong_language="区间已 been sorted by start, so only the last interval in merged needs checking; intervals "
        "that merely touch, like (1, 3) and (3, 5), are treated as overlapping and merged too.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
import hashlib
from pathlib import Path

CHUNK_SIZE = 1 << 20


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as f:
        @@COMMENT@@
        for chunk in iter(lambda: f.read(CHUNK_SIZE), b""):
            digest.update(chunk)
    return digest.hexdigest()
""",
        comment='分块读取文件，每块 CHUNK_SIZE 字节，避免把大文件一次性读入内存；iter 的哨兵值 b"" 表示已经读到'
        "文件末尾。",
        paraphrase='分块读取，每次只读 CHUNK_SIZE 字节，这样即使文件很大，内存占用也很小；f.read 返回空字节串 b"" '
        "时 iter 停止。",
        wrong_identifier='分块读取文件，每块 algorithm 字节，避免把大文件一次性读入内存；iter 的哨兵值 b"" 表示已经'
        "读到文件末尾。",
        missing_detail="分块读取文件，避免把大文件一次性读入内存。",
        wrong_statement="分块读取文件，每一块分别计算哈希后再拼接起来，因此结果与一次性读取整个文件时不同。",
        wrong_language='分块读 the file in blocks of CHUNK_SIZE bytes so that a large file is never loaded into '
        'memory at once; the sentinel b"" tells iter that the end of the file has been reached.',
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        if key not in self._data:
            return None
        self._data.move_to_end(key)
        return self._data[key]

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        @@COMMENT@@
        if len(self._data) > self.capacity:
            self._data.popitem(last=False)
""",
        comment="超出容量时淘汰最久未使用的一项。get 和 put 都会把键移到 _data 的末尾，所以开头的键最久没被访问，"
        "popitem(last=False) 删除的正是它。",
        paraphrase="超出容量 capacity 后删除最长时间没有访问的条目：每次读写都把键挪到 _data 末尾，因此位于开头的"
        "就是最旧的那个。",
        wrong_identifier="超出容量时淘汰最久未使用的一项。get 和 put 都会把键移到 value 的末尾，所以开头的键最久"
        "没被访问，popitem(last=False) 删除的正是它。",
        missing_detail="超出容量时用 popitem 删除一项。",
        wrong_statement="超出容量时淘汰最近刚写入的一项，因为 popitem(last=False) 删除的是 _data 末尾的键。",
        wrong_language="超出容 capacity, the least recently used entry is evicted: get and put move the key to the "
        "end of _data, so popitem(last=False) removes the oldest one at the front.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
from urllib.parse import unquote_plus


def parse_query(query: str) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {}
    for pair in query.lstrip("?").split("&"):
        if not pair:
            continue
        @@COMMENT@@
        key, _, value = pair.partition("=")
        params.setdefault(unquote_plus(key), []).append(unquote_plus(value))
    return params
""",
        comment="只按第一个等号切分，值中的等号原样保留，没有等号的参数得到空字符串；同名参数按出现顺序追加到 "
        "params 的同一个列表里。",
        paraphrase="只按第一个 = 拆分键和值，因此值里可以含有等号，缺少 = 时值为空串；重复出现的键会把所有值依次"
        "放进同一个列表。",
        wrong_identifier="只按第一个等号切分，值中的等号原样保留，没有等号的参数得到空字符串；同名参数按出现顺序"
        "追加到 pair 的同一个列表里。",
        missing_detail="只按第一个等号切分，值中的等号原样保留。",
        wrong_statement="只按第一个等号切分；同名参数出现多次时，后面的值会覆盖前面的值，没有等号的参数会被丢弃。",
        wrong_language="只按第 first equals sign only: later equals signs stay in the value and a pair without one "
        "gets an empty string; repeated keys are appended in order to the same list in params.",
    ),
    DemoFile(
        program="python",
        style="hash",
        source="""\
WHITE, GRAY, BLACK = 0, 1, 2


def has_cycle(graph: dict[str, list[str]]) -> bool:
    color = {node: WHITE for node in graph}

    # 递归深度受 Python 递归上限限制，超大的图请改用显式栈。
    def visit(node: str) -> bool:
        color[node] = GRAY
        for nxt in graph.get(node, []):
            state = color.get(nxt, WHITE)
            @@COMMENT@@
            if state == GRAY:
                return True
            if state == WHITE and visit(nxt):
                return True
        color[node] = BLACK
        return False

    return any(color[node] == WHITE and visit(node) for node in graph)
""",
        comment="三色标记：GRAY 表示节点还在当前递归栈上，再次遇到它说明存在回边，也就是有环；BLACK 节点已经处理完，"
        "不会形成环。",
        paraphrase="三色标记法：遇到 GRAY 节点意味着沿当前路径绕回了自身，图中必有环；而 BLACK 节点的所有后继都已"
        "检查过，可以直接跳过。",
        wrong_identifier="三色标记：WHITE 表示节点还在当前递归栈上，再次遇到它说明存在回边，也就是有环；BLACK 节点"
        "已经处理完，不会形成环。",
        missing_detail="三色标记：遇到 GRAY 节点说明有环。",
        wrong_statement="三色标记：遇到 BLACK 节点说明存在回边，也就是有环；GRAY 节点表示尚未访问过。",
        wrong_language="三色标 marking: a GRAY node is still on the current recursion stack, so reaching it again "
        "means a back edge and therefore a cycle; BLACK nodes are finished and cannot close one.",
    ),
)
