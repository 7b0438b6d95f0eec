"""Answers given per chat message (``perRegion="true"`` controls on a ``<Chat>``).

Messages are ``chatmessage`` results (label-studio-sdk ``ChatMessageValue``), and a
per-message answer names its message by id (docs/formulas.md, "Chat messages"). The
expectations here are written by hand, and α is checked against a plain enumeration
built from the export itself. That enumeration matches messages by their place in the
task data and counts chance pairs by position within strata of tasks with as many messages.
"""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.metrics import agreement
from ls_agreement.metrics.distances.region_match import similarity_matrix
from ls_agreement.metrics.distances.registry import get_distance
from ls_agreement.metrics.model import Attributed, Box, Message

CONFIG = """<View>
  <Chat name="chat" value="$chat" editable="false"/>
  <Rating name="overall" toName="chat" maxRating="5"/>
  <Choices name="quality" toName="chat" perRegion="true">
    <Choice value="good"/><Choice value="bad"/><Choice value="unclear"/>
  </Choices>
  <TextArea name="note" toName="chat" perRegion="true"/>
</View>"""

# "Thanks" said twice by the user: the two are told apart by their repetition
CHAT = [{"role": "user", "content": "Thanks"}, {"role": "assistant", "content": "You are welcome."},
        {"role": "user", "content": "Thanks"}, {"role": "assistant", "content": "Bye!"}]


def _message(rid: str, m: dict) -> dict:
    return {"id": rid, "from_name": "chat", "to_name": "chat", "type": "chatmessage",
            "value": {"chatmessage": {"role": m["role"], "content": m["content"]}}}


def _answer(rid: str, m: dict, control: str, answer: object) -> dict:
    rtype, key = {"quality": ("choices", "choices"), "note": ("textarea", "text")}[control]
    return {"id": rid, "from_name": control, "to_name": "chat", "type": rtype,
            "value": {"chatmessage": {"role": m["role"], "content": m["content"]}, key: answer}}


def _annotation(aid: int, chat: list[dict], answers: dict[int, str], prefix: str,
                shuffle: int | None = None, with_messages: bool = True) -> dict:
    """An annotation with its own message ids; ``answers``: message index -> choice. With
    ``shuffle`` the answers come in a random order, anywhere among the messages, which
    stay in conversation order (as Label Studio writes them)."""
    ids = [f"{prefix}{k}" for k in range(len(chat))]
    messages = [_message(i, m) for i, m in zip(ids, chat)] if with_messages else []
    given = [_answer(ids[k], chat[k], "quality", [c]) for k, c in answers.items()]
    if shuffle is None:
        return {"id": aid, "completed_by": aid, "result": messages + given}
    rng = random.Random(shuffle)
    rng.shuffle(given)
    slots = sorted(rng.sample(range(len(messages) + len(given)), len(given)))
    res, mi, gi = [], iter(messages), iter(given)
    for k in range(len(messages) + len(given)):
        res.append(next(gi) if k in slots else next(mi))
    return {"id": aid, "completed_by": aid, "result": res}


def _task(tid: int, chat: list[dict], *annotations: dict) -> dict:
    return {"id": tid, "data": {"chat": chat}, "annotations": list(annotations)}


# -- message matching ------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, same", [
    (("user", "Hi there", 0), ("user", "Hi there", 0), True),
    (("User", "Hi there", 0), ("user", "  Hi\n there ", 0), True),          # unseen whitespace, role case
    (("user", "caf\u00e9", 0), ("user", "cafe\u0301", 0), True),             # NFC: one letter, two encodings
    (("user", "Hi", 0), ("assistant", "Hi", 0), False),                      # another speaker
    (("user", "Hi there", 0), ("user", "Hi there!", 0), False),              # another text
    (("user", "hi there", 0), ("user", "Hi there", 0), False),               # case of the content is kept
    (("user", "Thanks", 0), ("user", "Thanks", 1), False),                   # the second "Thanks"
])
def test_messages_match_when_role_content_and_repetition_agree(a, b, same):
    sim = similarity_matrix([Message(*a)], [Message(*b)])
    assert sim.shape == (1, 1) and sim[0, 0] == (1.0 if same else 0.0)
    assert (Message(*a) == Message(*b)) is same


def test_message_against_other_region_types_and_many_at_once():
    msgs = [Message("user", "a"), Message("assistant", "b"), Message("user", "a", 1)]
    other = [Message("assistant", " b"), Box(0, 0, 1, 1), Message("user", "a", 1), Message("user", "a")]
    expected = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0]], dtype=float)
    np.testing.assert_array_equal(similarity_matrix(msgs, other), expected)


def test_bad_messages_are_refused():
    with pytest.raises(ValueError):
        Message("user", None)   # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Message("user", "x", -1)


# -- the adapter -----------------------------------------------------------------------------

def test_answers_resolve_to_their_messages_whatever_the_ids_and_order():
    tasks = [_task(1, CHAT, _annotation(1, CHAT, {0: "good", 2: "bad", 3: "good"}, "a"),
                   _annotation(2, CHAT, {0: "good", 2: "bad", 3: "good"}, "b", shuffle=5))]
    a = adapt(CONFIG, tasks, strict=True)
    assert "chat" not in a.controls and set(a.controls) == {"overall", "quality", "note"}
    ctl = a.controls["quality"]
    assert ctl.kind == "attributes" and not ctl.warnings
    v1, v2 = ctl.table["value"]
    assert set(v1) == {Attributed(Message("user", "Thanks", 0), "good"),
                       Attributed(Message("user", "Thanks", 1), "bad"),
                       Attributed(Message("assistant", "Bye!", 0), "good")}
    assert v1 == v2
    assert [m.content for m in ctl.table["options"][0]] == [m["content"] for m in CHAT]
    assert [m.nth for m in ctl.table["options"][0]] == [0, 0, 1, 0]
    d = get_distance("attributes.nominal")
    assert d.compute(d.prepare([v1, v2]), np.array([0]), np.array([1]))[0] == 0.0
    # the chat is said to be unmeasured once, with what is measured on it
    said = [w for w in a.warnings if "Chat 'chat'" in w]
    assert len(said) == 1 and "not measured itself" in said[0]
    assert "per message by 'quality', 'note'" in said[0] and "whole conversation by 'overall'" in said[0]


def test_answers_to_the_two_repeats_of_a_message_are_not_swapped():
    """Both "Thanks" answered, the answers swapped in the second annotation: two disagreements."""
    tasks = [_task(1, CHAT, _annotation(1, CHAT, {0: "good", 2: "bad"}, "a"),
                   _annotation(2, CHAT, {0: "bad", 2: "good"}, "b", shuffle=1))]
    v1, v2 = adapt(CONFIG, tasks, strict=True).controls["quality"].table["value"]
    d = get_distance("attributes.nominal")
    assert d.compute(d.prepare([v1, v2]), np.array([0]), np.array([1]))[0] == 1.0


def test_an_answer_whose_message_is_no_result_uses_the_copy_it_carries():
    ann = _annotation(1, CHAT, {1: "good"}, "a", with_messages=False)
    ann["result"].append({"id": "a3", "from_name": "quality", "to_name": "chat", "type": "choices",
                          "value": {"choices": ["bad"]}})    # no message, no copy: unresolved
    a = adapt(CONFIG, [_task(1, CHAT, ann)])
    ctl = a.controls["quality"]
    assert tuple(ctl.table["value"][0]) == (Attributed(Message("assistant", "You are welcome."), "good"),)
    assert any("1 region id(s) name no region" in w and "'a3'" in w for w in ctl.warnings)


def test_a_broken_message_is_named():
    bad = {"id": "x", "from_name": "chat", "to_name": "chat", "type": "chatmessage",
           "value": {"chatmessage": {"content": "no role"}}}
    tasks = [{"id": 9, "data": {"chat": CHAT}, "annotations": [{"id": 4, "completed_by": 1, "result": [bad]}]}]
    a = adapt(CONFIG, tasks)
    assert any("task 9" in w and "annotation 4" in w and "result[0].value.chatmessage.role" in w
               for w in a.warnings)
    with pytest.raises(AdapterError) as exc:
        adapt(CONFIG, tasks, strict=True)
    assert exc.value.field == "result[0].value.chatmessage.role"


def test_messages_written_by_each_annotator_are_counted():
    mine = CHAT[:2] + [{"role": "user", "content": "my own question"}]
    theirs = CHAT[:2] + [{"role": "user", "content": "another question"}]
    tasks = [_task(1, CHAT[:2], _annotation(1, mine, {2: "good"}, "a"), _annotation(2, theirs, {2: "good"}, "b"))]
    a = adapt(CONFIG, tasks)
    note = [w for w in a.warnings if "one annotator's conversation only" in w]
    assert len(note) == 1 and note[0].startswith("2 of 4 chat messages")
    v1, v2 = a.controls["quality"].table["value"]
    d = get_distance("attributes.nominal")
    assert d.compute(d.prepare([v1, v2]), np.array([0]), np.array([1]))[0] == 1.0


# -- α against an enumeration ----------------------------------------------------------------

def _export(seed: int, n_tasks: int = 12) -> list[dict]:
    """Conversations of 2 to 5 messages (repeats included), 3 or 4 annotators each answering a
    random subset of the messages, half the time with the task's favourite answer."""
    rng = random.Random(seed)
    words = ["ok", "Thanks", "What?", "Sure.", "No."]
    tasks = []
    for t in range(n_tasks):
        chat = [{"role": ("user", "assistant")[k % 2], "content": rng.choice(words)}
                for k in range(rng.randint(2, 5))]
        fav = {k: rng.choice(["good", "bad", "unclear"]) for k in range(len(chat))}
        anns = []
        for a in range(rng.randint(3, 4)):
            answers = {k: fav[k] if rng.random() < 0.5 else rng.choice(["good", "bad", "unclear"])
                       for k in range(len(chat)) if rng.random() < 0.7}
            anns.append(_annotation(100 * t + a, chat, answers, f"t{t}a{a}m", shuffle=rng.randint(0, 99)))
            anns[-1]["completed_by"] = a + 1
        tasks.append(_task(t + 1, chat, *anns))
    return tasks


def _reference_alpha(tasks: list[dict], form: str) -> float:
    """α by enumeration, straight from the export: a value is {message index in the task
    data: answer}; D = 1 - (answers equal on a message both answered) / max(sizes); chance
    pairs join values of tasks with as many messages, messages matched by index."""
    def d(a: dict, b: dict) -> float:
        if not a and not b:
            return 0.0
        return 1.0 - sum(a[k] == b[k] for k in a.keys() & b.keys()) / max(len(a), len(b))

    items, strata = [], {}
    for t in tasks:
        vals = []
        for ann in t["annotations"]:
            index = {r["id"]: int(r["id"].rsplit("m", 1)[1]) for r in ann["result"] if r["type"] == "chatmessage"}
            vals.append({index[r["id"]]: r["value"]["choices"][0] for r in ann["result"] if r["type"] == "choices"})
        items.append(vals)
        strata.setdefault(len(t["data"]["chat"]), []).append(vals)
    obs = [(d(a, b), len(v)) for v in items for a, b in itertools.combinations(v, 2)]
    n = sum(len(v) for v in items)
    num = den = 0.0
    if form == "pairwise":
        d_o = sum(x for x, _ in obs) / len(obs)
        for group in strata.values():
            chance = [d(a, b) for u, w in itertools.combinations(group, 2) for a in u for b in w]
            if chance:
                p_s = sum(len(g) * (len(g) - 1) / 2 for g in group)
                num += p_s * sum(chance) / len(chance)
                den += p_s
        return 1.0 - d_o / (num / den)
    d_o = 2.0 / n * sum(x / (m - 1) for x, m in obs)
    for group in strata.values():
        if len(group) < 2:
            continue
        flat = [x for g in group for x in g]
        pairs = [d(a, b) for a, b in itertools.combinations(flat, 2)]
        num += len(flat) * sum(pairs) / len(pairs)
        den += len(flat)
    return 1.0 - d_o / (num / den)


@pytest.mark.parametrize("form", ["canonical", "pairwise"])
@pytest.mark.parametrize("seed", [1, 2])
def test_alpha_matches_an_enumeration_by_message_position(seed, form):
    tasks = _export(seed)
    table = adapt(CONFIG, tasks, strict=True).controls["quality"].table
    res = agreement(table, "attributes.nominal", form=form, bootstrap=0, expected_pairs="all")
    assert res.alpha == pytest.approx(_reference_alpha(tasks, form), abs=1e-9)
