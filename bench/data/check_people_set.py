"""Validate the hand-written multi-user "people" evaluation set and print its counts.

Usage:
    python bench/data/check_people_set.py [DATA_DIR]

DATA_DIR defaults to the directory of this script. Standard library only (Python 3.11).

Files: people_memories.jsonl, people_queries.jsonl, people_corrections.jsonl.

Checks (any failure is an ERROR and the exit status is 1):
- ids unique and well formed (users p01.., memories <user>m01, queries <user>q01, corrections pc01);
- every `needs` / `replaces` id exists and belongs to the same user;
- needs-memory queries list 1-2 needs, no-memory queries none;
- categories from the fixed list; memory and correction texts are one line of at most 200
  characters; no text anywhere holds a run of 9+ digits (card numbers, account or government ids);
- each user has 14-16 memories in at least 8 categories, with at least two categories holding
  two or more memories (facts on the same topic that compete);
- each user has 6 needs-memory and 6 no-memory queries, 3 + 3 of each kind per split, at least
  2 two-memory queries with one in each split, at least 2 hard negatives and 1 first-person
  fact-free query;
- tags from the list; `two_memory` exactly when two needs; `hard_negative` and
  `first_person_no_fact` only on no-memory queries; `possessive` only with a my/our word;
  `first_person_no_fact` only with a first-person word; `names_entity` only when the query shares
  a content word with one of the user's memories;
- `shares_word` exactly when the query shares a content word with a needed memory (see
  `content_stems`);
- one correction per user, splits alternating, the text differs from the replaced memory, the
  replaced memory is not a target of any query (so the queries' labels hold whether or not the
  corrections are applied), and half of the correction queries (+-1) share a content word with
  the corrected text.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

CATEGORIES = frozenset(
    [
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
    ]
)
KINDS = ("needs_memory", "no_memory")
SPLITS = ("dev", "test")
TAGS = (
    "two_memory",
    "shares_word",
    "possessive",
    "names_entity",
    "indirect",
    "hard_negative",
    "first_person_no_fact",
)
MAX_CHARS = 200
MEMORIES_PER_USER = (14, 16)
MIN_CATEGORIES_PER_USER = 8
MIN_SHARED_TOPICS = 2
NEEDS_PER_USER = NO_MEMORY_PER_USER = 6
MIN_TWO_MEMORY = 2
MIN_HARD_NEGATIVES = 2
MIN_FIRST_PERSON = 1

USER_ID = re.compile(r"^p\d{2}$")
MEMORY_ID = re.compile(r"^(p\d{2})m\d{2}$")
QUERY_ID = re.compile(r"^(p\d{2})q\d{2}$")
CORRECTION_ID = re.compile(r"^pc\d{2}$")
LONG_DIGIT_RUN = re.compile(r"\d{9,}")

# Function words only: articles and determiners, pronouns, prepositions, conjunctions,
# auxiliaries and modals, question words, a few degree/time adverbs, interjection-like
# fillers, and the fragments left when contractions are split on the apostrophe.
FUNCTION_WORDS = frozenset(
    """
    a an the this that these those some any each every either neither no none all both few
    many much more most other another such own same
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves one ones
    who whom whose which what whatever when where why how whether
    about above across after against along among around as at before behind below beneath
    beside besides between beyond by down during except for from in inside into like near of
    off on onto out outside over past per since than through throughout till to toward towards
    under underneath until unto up upon via with within without
    and but or nor so yet if because although though while unless whereas
    am is are was were be been being do does did doing done have has had having
    can could may might must shall should will would ought
    not also just too very quite really rather still even only ever again then there here now
    ok okay oh yes yeah please
    s t d ll m re ve don doesn didn isn aren wasn weren won wouldn shouldn couldn haven hasn
    hadn can cannot mustn needn
    """.split()  # noqa: SIM905 - a reviewed word list reads best as prose
)
SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("es", ""), ("ed", ""), ("s", ""))
KEEP_FINAL_S = ("ss", "us", "is")  # glass, bus, analysis are not plurals
MIN_STEM = 3
POSSESSIVE_WORDS = frozenset({"my", "our", "mine", "ours"})
FIRST_PERSON_WORDS = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})


def tokens(text: str) -> list[str]:
    """Lowercased runs of letters and digits (Unicode-aware); 3,500 and 5.8 stay one number."""
    text = unicodedata.normalize("NFC", text.lower())
    text = re.sub(r"(?<=\d)[,.](?=\d)", "", text)
    return re.findall(r"[^\W_]+", text)


def stem(word: str) -> str:
    """Strip simple inflections (s, es, ies, ed, ing), at most twice, so that cats/cat,
    studies/study, baked/baking/bake and mornings/morning compare equal."""
    if word.isdigit():
        return word
    for _ in range(2):
        for suffix, replacement in SUFFIXES:
            if suffix == "s" and word.endswith(KEEP_FINAL_S):
                continue
            if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM:
                word = word[: -len(suffix)] + replacement
                break
        else:
            break
    if len(word) > MIN_STEM and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # running -> runn -> run, planned -> plann -> plan
    if len(word) > MIN_STEM and word.endswith("e"):
        word = word[:-1]  # bake / baked / baking -> bak
    return word


def content_stems(text: str) -> set[str]:
    """Stems of the content words: function words and single letters dropped, numbers kept."""
    return {
        stem(t) for t in tokens(text) if t not in FUNCTION_WORDS and (len(t) > 1 or t.isdigit())
    }


class Report:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, message: str) -> None:
        self.errors.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def load_jsonl(path: Path, report: Report) -> list[dict]:
    rows: list[dict] = []
    if not path.exists():
        report.error(f"missing file {path.name}")
        return rows
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


def check_text(where: str, text: object, report: Report, max_chars: int | None) -> bool:
    if not isinstance(text, str) or not text.strip():
        report.error(f"{where}: empty or missing text")
        return False
    if "\n" in text or "\r" in text:
        report.error(f"{where}: text spans several lines")
    if max_chars is not None and len(text) > max_chars:
        report.error(f"{where}: {len(text)} characters (max {max_chars})")
    if LONG_DIGIT_RUN.search(text):
        report.error(f"{where}: a run of 9+ digits looks like a secret or an id")
    return True


def check_memories(rows: list[dict], report: Report) -> dict[str, dict]:  # noqa: PLR0912
    memories: dict[str, dict] = {}
    for row in rows:
        mid, user, category = str(row.get("id")), str(row.get("user")), row.get("category")
        match = MEMORY_ID.match(mid)
        if not match:
            report.error(f"memory id {mid!r} is not like p01m01")
        elif match.group(1) != user:
            report.error(f"{mid}: id does not belong to user {user!r}")
        if not USER_ID.match(user):
            report.error(f"{mid}: user {user!r} is not like p01")
        if mid in memories:
            report.error(f"duplicate memory id {mid}")
        if category not in CATEGORIES:
            report.error(f"{mid}: unknown category {category!r}")
        if check_text(mid, row.get("text"), report, MAX_CHARS):
            memories[mid] = {"user": user, "text": row["text"], "category": str(category)}
    by_user: defaultdict[str, list[str]] = defaultdict(list)
    for mid, memory in memories.items():
        by_user[memory["user"]].append(mid)
    for user, ids in sorted(by_user.items()):
        expected = [f"{user}m{i:02d}" for i in range(1, len(ids) + 1)]
        if sorted(ids) != expected:
            report.error(f"{user}: memory ids are not numbered m01..m{len(ids):02d}")
        low, high = MEMORIES_PER_USER
        if not low <= len(ids) <= high:
            report.error(f"{user}: {len(ids)} memories (want {low}-{high})")
        categories = Counter(memories[m]["category"] for m in ids)
        if len(categories) < MIN_CATEGORIES_PER_USER:
            report.error(f"{user}: only {len(categories)} categories")
        if sum(1 for c in categories.values() if c >= 2) < MIN_SHARED_TOPICS:
            report.error(f"{user}: fewer than {MIN_SHARED_TOPICS} categories with 2+ memories")
        texts = Counter(memories[m]["text"].strip().lower() for m in ids)
        for text, count in texts.items():
            if count > 1:
                report.error(f"{user}: memory text repeated: {text!r}")
    return memories


def shares_with_needs(query: dict, memories: dict[str, dict]) -> set[str]:
    needed = set().union(*(content_stems(memories[n]["text"]) for n in query["needs"]))
    return content_stems(query["text"]) & needed


def check_query_row(row: dict, memories: dict[str, dict], report: Report) -> dict | None:  # noqa: PLR0912
    qid, user, kind = str(row.get("id")), str(row.get("user")), row.get("kind")
    match = QUERY_ID.match(qid)
    if not match:
        report.error(f"query id {qid!r} is not like p01q01")
    elif match.group(1) != user:
        report.error(f"{qid}: id does not belong to user {user!r}")
    if kind not in KINDS:
        report.error(f"{qid}: unknown kind {kind!r}")
        return None
    if row.get("split") not in SPLITS:
        report.error(f"{qid}: unknown split {row.get('split')!r}")
        return None
    if not check_text(qid, row.get("text"), report, None):
        return None
    needs, tags = row.get("needs"), row.get("tags")
    if not isinstance(needs, list) or not isinstance(tags, list):
        report.error(f"{qid}: needs and tags must be lists")
        return None
    if kind == "no_memory" and needs:
        report.error(f"{qid}: no_memory query lists needs {needs}")
    if kind == "needs_memory" and not 1 <= len(needs) <= 2:
        report.error(f"{qid}: needs_memory query lists {len(needs)} needs (want 1 or 2)")
    if len(set(needs)) != len(needs):
        report.error(f"{qid}: repeated id in needs")
    for need in needs:
        if need not in memories:
            report.error(f"{qid}: needs unknown memory {need!r}")
            return None
        if memories[need]["user"] != user:
            report.error(f"{qid}: needs {need}, a memory of another user")
    unknown = [t for t in tags if t not in TAGS]
    if unknown:
        report.error(f"{qid}: unknown tags {unknown}")
    if len(set(tags)) != len(tags):
        report.error(f"{qid}: repeated tag")
    return {
        "id": qid,
        "user": user,
        "kind": kind,
        "split": row["split"],
        "text": row["text"],
        "needs": [str(n) for n in needs],
        "tags": set(tags),
    }


def check_tags(
    query: dict, memories: dict[str, dict], user_stems: set[str], report: Report
) -> None:
    qid, tags, words = query["id"], query["tags"], set(tokens(query["text"]))
    if ("two_memory" in tags) != (len(query["needs"]) == 2):
        report.error(f"{qid}: two_memory tag does not match its {len(query['needs'])} needs")
    if query["kind"] == "needs_memory":
        for tag in ("hard_negative", "first_person_no_fact"):
            if tag in tags:
                report.error(f"{qid}: {tag} on a needs_memory query")
    shared = shares_with_needs(query, memories)
    if "shares_word" in tags and not shared:
        report.error(f"{qid}: tagged shares_word but shares no content word with its needs")
    if "shares_word" not in tags and shared:
        report.error(f"{qid}: shares {sorted(shared)} with its needs but lacks shares_word")
    if "possessive" in tags and not words & POSSESSIVE_WORDS:
        report.error(f"{qid}: tagged possessive but has no my/our word")
    if "first_person_no_fact" in tags and not words & FIRST_PERSON_WORDS:
        report.error(f"{qid}: tagged first_person_no_fact but is not in the first person")
    if "names_entity" in tags and not content_stems(query["text"]) & user_stems:
        report.error(f"{qid}: tagged names_entity but shares no word with the user's memories")


def check_queries(rows: list[dict], memories: dict[str, dict], report: Report) -> list[dict]:
    queries: list[dict] = []
    seen: set[str] = set()
    texts: Counter[str] = Counter()
    for row in rows:
        qid = str(row.get("id"))
        if qid in seen:
            report.error(f"duplicate query id {qid}")
        seen.add(qid)
        query = check_query_row(row, memories, report)
        if query is not None:
            queries.append(query)
            texts[query["text"].strip().lower()] += 1
    for text, count in texts.items():
        if count > 1:
            report.error(f"query text appears {count} times: {text!r}")
    stems_by_user: defaultdict[str, set[str]] = defaultdict(set)
    for memory in memories.values():
        stems_by_user[memory["user"]] |= content_stems(memory["text"])
    for query in queries:
        check_tags(query, memories, stems_by_user[query["user"]], report)
    return queries


def check_users(users: list[str], queries: list[dict], report: Report) -> None:
    by_user: defaultdict[str, list[dict]] = defaultdict(list)
    for query in queries:
        by_user[query["user"]].append(query)
    for user in users:
        mine = by_user.get(user, [])
        ids = sorted(q["id"] for q in mine)
        if ids != [f"{user}q{i:02d}" for i in range(1, len(ids) + 1)]:
            report.error(f"{user}: query ids are not numbered q01..q{len(ids):02d}")
        for kind, want in (("needs_memory", NEEDS_PER_USER), ("no_memory", NO_MEMORY_PER_USER)):
            of_kind = [q for q in mine if q["kind"] == kind]
            if len(of_kind) != want:
                report.error(f"{user}: {len(of_kind)} {kind} queries (want {want})")
            splits = Counter(q["split"] for q in of_kind)
            if any(splits[s] != want // 2 for s in SPLITS):
                report.error(
                    f"{user}: {kind} splits {dict(splits)} (want {want // 2} + {want // 2})"
                )
        two = [q for q in mine if len(q["needs"]) == 2]
        if len(two) < MIN_TWO_MEMORY:
            report.error(f"{user}: {len(two)} two-memory queries (want {MIN_TWO_MEMORY}+)")
        if {q["split"] for q in two} != set(SPLITS):
            report.error(f"{user}: two-memory queries are not in both splits")
        hard = sum(1 for q in mine if "hard_negative" in q["tags"])
        first = sum(1 for q in mine if "first_person_no_fact" in q["tags"])
        if hard < MIN_HARD_NEGATIVES:
            report.error(f"{user}: {hard} hard negatives (want {MIN_HARD_NEGATIVES}+)")
        if first < MIN_FIRST_PERSON:
            report.error(
                f"{user}: {first} first-person fact-free queries (want {MIN_FIRST_PERSON}+)"
            )
    for user in by_user:
        if user not in users:
            report.error(f"queries for user {user!r}, who has no memories")


def check_corrections(  # noqa: PLR0912
    rows: list[dict],
    memories: dict[str, dict],
    queries: list[dict],
    users: list[str],
    report: Report,
) -> dict[str, int]:
    targets = {n for q in queries for n in q["needs"]}
    seen: set[str] = set()
    per_user: Counter[str] = Counter()
    stats = {"dev": 0, "test": 0, "shared": 0, "shared_old": 0, "total": 0}
    for number, row in enumerate(rows, 1):
        cid, user, replaces = str(row.get("id")), str(row.get("user")), str(row.get("replaces"))
        if not CORRECTION_ID.match(cid):
            report.error(f"correction id {cid!r} is not like pc01")
        if cid in seen:
            report.error(f"duplicate correction id {cid}")
        seen.add(cid)
        per_user[user] += 1
        split = row.get("split")
        if split not in SPLITS:
            report.error(f"{cid}: unknown split {split!r}")
        else:
            stats[split] += 1
            if split != SPLITS[(number - 1) % 2]:
                report.error(f"{cid}: splits do not alternate dev/test")
        if replaces not in memories:
            report.error(f"{cid}: replaces unknown memory {replaces!r}")
            continue
        if memories[replaces]["user"] != user:
            report.error(f"{cid}: replaces {replaces}, a memory of another user")
        if replaces in targets:
            report.error(f"{cid}: replaces {replaces}, which a query needs")
        text, query = row.get("text"), row.get("query")
        ok_text = check_text(f"{cid} text", text, report, MAX_CHARS)
        ok_query = check_text(f"{cid} query", query, report, None)
        if not (ok_text and ok_query):
            continue
        old = memories[replaces]["text"]
        if text.strip().lower() == old.strip().lower():
            report.error(f"{cid}: text is the same as the replaced memory's")
        stats["total"] += 1
        if content_stems(query) & content_stems(text):
            stats["shared"] += 1
        if content_stems(query) & content_stems(old):
            stats["shared_old"] += 1
    for user in users:
        if per_user[user] != 1:
            report.error(f"{user}: {per_user[user]} corrections (want 1)")
    if abs(2 * stats["shared"] - stats["total"]) > 2:
        report.error(
            f"{stats['shared']} of {stats['total']} correction queries share a word with the "
            "corrected text (want about half)"
        )
    return stats


def print_counts(
    memories: dict[str, dict], queries: list[dict], users: list[str], corrections: dict[str, int]
) -> None:
    targets = {n for q in queries for n in q["needs"]}
    sizes = Counter(memories[m]["user"] for m in memories)
    print(f"users: {len(users)}")
    print(
        f"memories: {len(memories)} ({min(sizes.values(), default=0)}-"
        f"{max(sizes.values(), default=0)} per user; {len(targets)} targets, "
        f"{len(memories) - len(targets)} distractors)"
    )
    per_category = Counter(m["category"] for m in memories.values())
    target_category = Counter(memories[t]["category"] for t in targets if t in memories)
    print(f"  {'category':<14}{'memories':>9}{'targets':>8}")
    for category in sorted(per_category):
        print(f"  {category:<14}{per_category[category]:>9}{target_category[category]:>8}")
    print("queries:")
    print(f"  {'kind':<14}{'dev':>5}{'test':>6}{'total':>7}")
    for kind in KINDS:
        splits = Counter(q["split"] for q in queries if q["kind"] == kind)
        print(f"  {kind:<14}{splits['dev']:>5}{splits['test']:>6}{sum(splits.values()):>7}")
    two = Counter(q["split"] for q in queries if len(q["needs"]) == 2)
    print(f"  two-memory queries: {sum(two.values())} (dev {two['dev']}, test {two['test']})")
    print("tags:")
    print(f"  {'tag':<22}{'needs_memory':>13}{'no_memory':>11}")
    for tag in TAGS:
        counts = Counter(q["kind"] for q in queries if tag in q["tags"])
        print(f"  {tag:<22}{counts['needs_memory']:>13}{counts['no_memory']:>11}")
    user_stems: defaultdict[str, set[str]] = defaultdict(set)
    for memory in memories.values():
        user_stems[memory["user"]] |= content_stems(memory["text"])
    touching = Counter(
        q["kind"] for q in queries if content_stems(q["text"]) & user_stems[q["user"]]
    )
    print(
        "  sharing a content word with ANY of the user's memories: "
        f"needs_memory {touching['needs_memory']}, no_memory {touching['no_memory']}"
    )
    print(
        f"corrections: {corrections['total']} (dev {corrections['dev']}, test "
        f"{corrections['test']}); query shares a word with the corrected text: "
        f"{corrections['shared']}, with the replaced text: {corrections['shared_old']}"
    )


def main(argv: list[str]) -> int:
    data_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    report = Report()
    memories = check_memories(load_jsonl(data_dir / "people_memories.jsonl", report), report)
    users = sorted({m["user"] for m in memories.values()})
    if users != [f"p{i:02d}" for i in range(1, len(users) + 1)]:
        report.error("users are not numbered p01..pNN")
    queries = check_queries(load_jsonl(data_dir / "people_queries.jsonl", report), memories, report)
    check_users(users, queries, report)
    corrections = check_corrections(
        load_jsonl(data_dir / "people_corrections.jsonl", report), memories, queries, users, report
    )
    print_counts(memories, queries, users, corrections)
    for message in report.warnings:
        print(f"WARNING {message}")
    for message in report.errors:
        print(f"ERROR {message}")
    print(f"{len(report.errors)} errors, {len(report.warnings)} warnings")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
