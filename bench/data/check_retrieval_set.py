"""Validate the hand-written retrieval evaluation set and print its counts.

Usage:
    python bench/data/check_retrieval_set.py [DATA_DIR]

DATA_DIR defaults to the directory of this script. Standard library only.

Checks: ids unique and well formed; every `needs` id exists; at least 150 queries of each kind;
memory texts are one line of at most 200 characters in a known category; both splits hold both
kinds and every category of needs-memory query; and the shared-words rule: a needs-memory query
shares no content word with the memories it needs (after lowercasing, dropping stop words and
stripping simple suffixes). Words that merely share a 5-letter prefix (allergy/allergic) are
reported as warnings. When `retrieval_corrections.jsonl` is there, each correction must name
an existing memory (at most one correction per memory), hold a memory-like text that differs
from the one it replaces, a query and a split, and its query must share no content word with
its corrected text (the same rule); a word shared with the replaced text is a warning.
Exit status 1 when any check fails.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

CATEGORIES = frozenset(
    {
        "diet",
        "location",
        "work",
        "education",
        "family",
        "pets",
        "health",
        "hobbies",
        "language",
        "travel",
        "preferences",
        "relationships",
        "goals",
        "finance",
        "home",
        "schedule",
        "tech",
        "general",
    }
)
KINDS = ("needs_memory", "no_memory")
SPLITS = ("dev", "test")
MIN_QUERIES_PER_KIND = 150
MAX_MEMORY_CHARS = 200
MAX_NEEDS = 2
NEAR_MATCH_PREFIX = 5
MEMORY_ID = re.compile(r"^m\d{3,}$")
QUERY_ID = re.compile(r"^q\d{3,}$")
CORRECTION_ID = re.compile(r"^c\d{2,}$")
LONG_DIGIT_RUN = re.compile(r"\d{9,}")  # card numbers, account or government ids

# Function words only: pronouns, determiners, prepositions, conjunctions, auxiliaries and
# modals, question words, and the fragments left when contractions are split on apostrophes.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    also may might must shall yet us
    don doesn didn isn aren wasn weren won wouldn shouldn couldn haven hasn hadn ain mustn needn
    ll re ve im pm etc
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

# (suffix, replacement), tried in order; applied at most twice (families -> family -> fami).
SUFFIXES = (
    ("ians", ""),
    ("ian", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ers", ""),
    ("er", ""),
    ("ed", ""),
    ("es", ""),
    ("ly", ""),
    ("s", ""),
)
MIN_STEM = 3
KEEP_FINAL_S = ("ss", "us", "is")  # glass, bus, analysis are not plurals


def stem(token: str) -> str:
    """Strip simple inflections so run/running/runner and bake/baked/bakes compare equal."""
    if token.isdigit():
        return token
    for _ in range(2):
        for suffix, replacement in SUFFIXES:
            if suffix == "s" and token.endswith(KEEP_FINAL_S):
                continue
            if token.endswith(suffix) and len(token) - len(suffix) >= MIN_STEM:
                token = token[: -len(suffix)] + replacement
                break
        else:
            break
    if len(token) > MIN_STEM and token.endswith("e"):
        token = token[:-1]
    if len(token) >= MIN_STEM and token.endswith("y"):
        token = token[:-1] + "i"
    if len(token) > MIN_STEM and token[-1] == token[-2] and token[-1] not in "aeiou":
        token = token[:-1]
    return token


def content_words(text: str) -> set[str]:
    """Lowercased letter/digit tokens that are not stop words or single letters."""
    text = re.sub(r"(?<=\d)[,.](?=\d)", "", text.lower())  # 14,000 -> 14000, 5.8 -> 58
    tokens = re.findall(r"[a-z0-9]+", text)
    return {t for t in tokens if t not in STOP_WORDS and (len(t) > 1 or t.isdigit())}


def stems(text: str) -> set[str]:
    return {stem(t) for t in content_words(text)}


def near_matches(query: str, memory: str) -> list[tuple[str, str]]:
    """Word pairs with different stems but a shared 5-letter prefix (allergy/allergic)."""
    pairs = []
    for q in sorted(content_words(query)):
        for m in sorted(content_words(memory)):
            if (
                stem(q) != stem(m)
                and min(len(q), len(m)) >= NEAR_MATCH_PREFIX
                and q[:NEAR_MATCH_PREFIX] == m[:NEAR_MATCH_PREFIX]
            ):
                pairs.append((q, m))
    return pairs


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def error(self, message: str) -> None:
        self.errors.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def load_jsonl(path: Path, report: Report) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            report.error(f"{path.name}:{number}: not JSON ({exc})")
            continue
        if not isinstance(row, dict):
            report.error(f"{path.name}:{number}: not a JSON object")
            continue
        rows.append(row)
    return rows


def check_memories(memories: list[dict[str, object]], report: Report) -> dict[str, dict[str, str]]:
    by_id: dict[str, dict[str, str]] = {}
    for row in memories:
        mid, text, category = str(row.get("id")), row.get("text"), row.get("category")
        if not MEMORY_ID.match(mid):
            report.error(f"memory id {mid!r} is not like m001")
        if mid in by_id:
            report.error(f"duplicate memory id {mid}")
        if not isinstance(text, str) or not text.strip():
            report.error(f"{mid}: empty text")
            continue
        if len(text) > MAX_MEMORY_CHARS:
            report.error(f"{mid}: {len(text)} characters (max {MAX_MEMORY_CHARS})")
        if "\n" in text:
            report.error(f"{mid}: text spans several lines")
        if LONG_DIGIT_RUN.search(text):
            report.error(f"{mid}: long digit run looks like a secret or an id")
        if category not in CATEGORIES:
            report.error(f"{mid}: unknown category {category!r}")
        by_id[mid] = {"text": text, "category": str(category)}
    texts = Counter(m["text"].lower() for m in by_id.values())
    for text, count in texts.items():
        if count > 1:
            report.error(f"memory text appears {count} times: {text!r}")
    return by_id


def needs_are_valid(
    qid: str, kind: object, needs: object, memories: dict[str, dict[str, str]], report: Report
) -> bool:
    """Check one query's `needs` against its kind; False when the row can't be used."""
    if not isinstance(needs, list):
        report.error(f"{qid}: needs is not a list")
        return False
    if kind == "no_memory" and needs:
        report.error(f"{qid}: no_memory query lists needs {needs}")
    if kind == "needs_memory":
        if not 1 <= len(needs) <= MAX_NEEDS:
            report.error(f"{qid}: needs_memory query lists {len(needs)} needs")
        if len(set(needs)) != len(needs):
            report.error(f"{qid}: repeated id in needs")
        missing = [n for n in needs if n not in memories]
        if missing:
            report.error(f"{qid}: needs unknown memories {missing}")
            return False
    return True


def check_queries(
    queries: list[dict[str, object]], memories: dict[str, dict[str, str]], report: Report
) -> list[dict[str, object]]:
    seen: set[str] = set()
    texts: Counter[str] = Counter()
    valid = []
    for row in queries:
        qid, text, kind = str(row.get("id")), row.get("text"), row.get("kind")
        if not QUERY_ID.match(qid):
            report.error(f"query id {qid!r} is not like q001")
        if qid in seen:
            report.error(f"duplicate query id {qid}")
        seen.add(qid)
        if not isinstance(text, str) or not text.strip():
            report.error(f"{qid}: empty text")
            continue
        texts[text.strip().lower()] += 1
        if kind not in KINDS:
            report.error(f"{qid}: unknown kind {kind!r}")
            continue
        if row.get("split") not in SPLITS:
            report.error(f"{qid}: unknown split {row.get('split')!r}")
        if needs_are_valid(qid, kind, row.get("needs"), memories, report):
            valid.append(row)
    for text, count in texts.items():
        if count > 1:
            report.error(f"query text appears {count} times: {text!r}")
    return valid


def check_counts(
    queries: list[dict[str, object]], memories: dict[str, dict[str, str]], report: Report
) -> None:
    by_kind = Counter(str(q["kind"]) for q in queries)
    for kind in KINDS:
        if by_kind[kind] < MIN_QUERIES_PER_KIND:
            report.error(f"only {by_kind[kind]} {kind} queries (need {MIN_QUERIES_PER_KIND})")
        for split in SPLITS:
            if not any(q["kind"] == kind and q["split"] == split for q in queries):
                report.error(f"no {kind} query in split {split}")
    categories = {query_category(q, memories) for q in queries if q["kind"] == "needs_memory"}
    for category in sorted(categories):
        for split in SPLITS:
            if not any(
                q["kind"] == "needs_memory"
                and q["split"] == split
                and query_category(q, memories) == category
                for q in queries
            ):
                report.error(f"category {category} has no needs_memory query in split {split}")
    missing = CATEGORIES - categories
    if missing:
        report.warn(f"categories with no needs_memory query: {sorted(missing)}")


def needs_of(query: dict[str, object]) -> list[str]:
    needs = query["needs"]
    return [str(n) for n in needs] if isinstance(needs, list) else []


def query_category(query: dict[str, object], memories: dict[str, dict[str, str]]) -> str:
    return memories[needs_of(query)[0]]["category"]


def check_shared_words(
    queries: list[dict[str, object]], memories: dict[str, dict[str, str]], report: Report
) -> dict[str, float]:
    """The shared-words rule, plus the numbers for the one-line overlap summary."""
    needs_queries = [q for q in queries if q["kind"] == "needs_memory"]
    violations = near = 0
    jaccards = []
    for q in needs_queries:
        q_text = str(q["text"])
        q_stems = stems(q_text)
        needed = [memories[n] for n in needs_of(q)]
        m_stems = set().union(*(stems(m["text"]) for m in needed))
        shared = q_stems & m_stems
        if shared:
            violations += 1
            report.error(f"{q['id']} shares {sorted(shared)} with {q['needs']}: {q_text!r}")
        for m in needed:
            for pair in near_matches(q_text, m["text"]):
                near += 1
                report.warn(f"{q['id']} near-match {pair[0]!r}~{pair[1]!r}: {q_text!r}")
        union = q_stems | m_stems
        jaccards.append(len(shared) / len(union) if union else 0.0)
    memory_vocab = set().union(*(stems(m["text"]) for m in memories.values()))
    needs_vocab = set().union(*(stems(str(q["text"])) for q in needs_queries))

    def touching(kind: str) -> int:
        return sum(1 for q in queries if q["kind"] == kind and stems(str(q["text"])) & memory_vocab)

    return {
        "needs": len(needs_queries),
        "violations": violations,
        "near": near,
        "jaccard": sum(jaccards) / len(jaccards) if jaccards else 0.0,
        "needs_touching": touching("needs_memory"),
        "no_memory": sum(1 for q in queries if q["kind"] == "no_memory"),
        "no_memory_touching": touching("no_memory"),
        "memory_vocab": len(memory_vocab),
        "needs_vocab": len(needs_vocab),
        "needs_vocab_in_memories": len(needs_vocab & memory_vocab),
    }


def check_corrections(
    corrections: list[dict[str, object]], memories: dict[str, dict[str, str]], report: Report
) -> Counter[str]:
    """The corrections file: well formed, and its queries follow the shared-words rule
    against the corrected text. Returns the count per split."""
    seen: set[str] = set()
    replaced: set[str] = set()
    splits: Counter[str] = Counter()
    for row in corrections:
        cid, replaces = str(row.get("id")), str(row.get("replaces"))
        text, query, split = row.get("text"), row.get("query"), row.get("split")
        if not CORRECTION_ID.match(cid):
            report.error(f"correction id {cid!r} is not like c01")
        if cid in seen:
            report.error(f"duplicate correction id {cid}")
        seen.add(cid)
        if replaces not in memories:
            report.error(f"{cid}: replaces unknown memory {replaces!r}")
            continue
        if replaces in replaced:
            report.error(f"{cid}: {replaces} is corrected twice")
        replaced.add(replaces)
        if split not in SPLITS:
            report.error(f"{cid}: unknown split {split!r}")
        else:
            splits[str(split)] += 1
        if not isinstance(text, str) or not text.strip():
            report.error(f"{cid}: empty text")
        elif not isinstance(query, str) or not query.strip():
            report.error(f"{cid}: empty query")
        else:
            check_correction_words(cid, text, query, memories[replaces]["text"], report)
    return splits


def check_correction_words(cid: str, text: str, query: str, old: str, report: Report) -> None:
    """One correction's text is memory-like and new; its query follows the shared-words rule."""
    if len(text) > MAX_MEMORY_CHARS or "\n" in text or LONG_DIGIT_RUN.search(text):
        report.error(f"{cid}: text is not one short line without long digit runs")
    if text.strip().lower() == old.strip().lower():
        report.error(f"{cid}: text is the same as the replaced memory's")
    shared = stems(query) & stems(text)
    if shared:
        report.error(f"{cid} query shares {sorted(shared)} with its corrected text: {query!r}")
    for pair in near_matches(query, text):
        report.warn(f"{cid} near-match {pair[0]!r}~{pair[1]!r}: {query!r}")
    with_old = stems(query) & stems(old)
    if with_old:
        report.warn(f"{cid} query shares {sorted(with_old)} with the replaced memory")


def print_counts(queries: list[dict[str, object]], memories: dict[str, dict[str, str]]) -> None:
    targets = {n for q in queries for n in needs_of(q)}
    per_category = Counter(m["category"] for m in memories.values())
    target_category = Counter(memories[t]["category"] for t in targets if t in memories)
    print(
        f"memories: {len(memories)} ({len(targets)} targets, {len(memories) - len(targets)} "
        "distractors)"
    )
    print(f"  {'category':<14}{'total':>6}{'targets':>8}{'q dev':>7}{'q test':>7}")
    by_cat_split: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for q in queries:
        if q["kind"] == "needs_memory":
            by_cat_split[query_category(q, memories)][str(q["split"])] += 1
    for category in sorted(per_category):
        splits = by_cat_split[category]
        print(
            f"  {category:<14}{per_category[category]:>6}{target_category[category]:>8}"
            f"{splits['dev']:>7}{splits['test']:>7}"
        )
    print("queries:")
    for kind in KINDS:
        split_counts = Counter(str(q["split"]) for q in queries if q["kind"] == kind)
        total = sum(split_counts.values())
        detail = ", ".join(f"{s} {split_counts[s]}" for s in SPLITS)
        print(f"  {kind:<13}{total:>4}  ({detail})")
    sizes = Counter(len(needs_of(q)) for q in queries if q["kind"] == "needs_memory")
    print(
        "  needs per needs_memory query: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items()))
    )


def main(argv: list[str]) -> int:
    data_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    report = Report()
    memories = check_memories(load_jsonl(data_dir / "retrieval_memories.jsonl", report), report)
    queries = check_queries(
        load_jsonl(data_dir / "retrieval_queries.jsonl", report), memories, report
    )
    check_counts(queries, memories, report)
    stats = check_shared_words(queries, memories, report)
    print_counts(queries, memories)
    print(
        "vocabulary overlap: needs-memory queries sharing a content word with a needed memory "
        f"{stats['violations']}/{stats['needs']}, mean Jaccard {stats['jaccard']:.3f}, "
        f"5-letter-prefix near-matches {stats['near']}; sharing a word with ANY memory: "
        f"needs-memory {stats['needs_touching']}/{stats['needs']}, "
        f"no-memory {stats['no_memory_touching']}/{stats['no_memory']}; "
        f"needs-memory query vocabulary {stats['needs_vocab']} stems, "
        f"{stats['needs_vocab_in_memories']} of them in the memory vocabulary "
        f"({stats['memory_vocab']} stems)"
    )
    corrections_file = data_dir / "retrieval_corrections.jsonl"
    if corrections_file.exists():
        splits = check_corrections(load_jsonl(corrections_file, report), memories, report)
        detail = ", ".join(f"{s} {splits[s]}" for s in SPLITS)
        print(f"corrections: {sum(splits.values())} ({detail}), checked by the same rule")
    for message in report.warnings:
        print(f"WARNING {message}")
    for message in report.errors:
        print(f"ERROR {message}")
    print(f"{len(report.errors)} errors, {len(report.warnings)} warnings")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
