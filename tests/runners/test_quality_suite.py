"""The 40 questions must be exactly compare.py's: same seed, same draw order."""

import random

from runners.measure import quality_suite


def test_first_and_last_questions_match_the_seeded_draws():
    qs = quality_suite.questions()
    assert [q.kind for q in qs] == ["mul"] * 15 + ["add"] * 15 + ["capital"] * 10
    # Computed by hand from random.Random(20260925): mul pairs first, then add triples.
    assert qs[0].prompt == "What is 54 * 28? Reply with the number only."
    assert qs[1].prompt == "What is 77 * 27? Reply with the number only."
    assert qs[14].prompt == "What is 36 * 76? Reply with the number only."
    assert qs[15].prompt == "What is 360 + 875 - 688? Reply with the number only."
    assert qs[16].prompt == "What is 527 + 432 - 307? Reply with the number only."
    assert qs[29].prompt == "What is 150 + 937 - 139? Reply with the number only."
    assert qs[30].prompt == "What is the capital of Australia? Answer in one word."
    assert qs[39].prompt == "What is the capital of Vietnam? Answer in one word."


def test_whole_list_is_the_seeded_sequence():
    rng = random.Random(20260925)
    muls = [(rng.randint(12, 99), rng.randint(12, 99)) for _ in range(15)]
    adds = [(rng.randint(100, 999), rng.randint(100, 999), rng.randint(100, 999))
            for _ in range(15)]
    qs = quality_suite.questions()
    assert [q.prompt for q in qs[:15]] == [f"What is {a} * {b}? Reply with the number only."
                                           for a, b in muls]
    assert [q.prompt for q in qs[15:30]] == [
        f"What is {a} + {b} - {c}? Reply with the number only." for a, b, c in adds]


def test_scoring_regexes():
    qs = quality_suite.questions()
    assert qs[0].correct("The answer is 1512.")  # 54 * 28
    assert not qs[0].correct("15120")
    assert qs[15].correct("547")  # 360 + 875 - 688
    assert not qs[15].correct("-547") and not qs[15].correct("1547")
    brazil = next(q for q in qs if "Brazil" in q.prompt)
    assert brazil.correct("BRASILIA") and brazil.correct("Brasília")
    assert not brazil.correct("Rio")


def test_an_echo_of_the_question_earns_nothing():
    qs = quality_suite.questions()
    q18 = qs[17]
    assert q18.prompt == "What is 337 + 942 - 337? Reply with the number only."
    echo = "What is 337 + 942 - 337? Reply with the number only.\nWhat is 337+942-337?"
    assert q18.correct_raw(echo)  # the seeds' regex finds 942 inside the echo
    assert not q18.correct(echo)
    assert q18.correct("337 + 942 - 337 = 942")  # the echo goes, the answer stays
    assert q18.correct("What is 337 + 942 - 337? 942")


def test_a_partial_restatement_of_the_sum_earns_nothing():
    """SmolLM2 answered question 18 with "337 + 942 = 1850": the 942 is the question's,
    not an answer."""
    q18 = quality_suite.questions()[17]
    assert q18.correct_raw("337 + 942 = 1850")
    assert not q18.correct("337 + 942 = 1850")
    assert not q18.correct("942 - 337 = 605")
    assert q18.correct("942") and q18.correct("337 + 942 - 337 = 942")
    assert quality_suite.sub_expressions("337 + 942 - 337") == [
        "337 + 942", "337 + 942 - 337", "942 - 337"]


def test_an_echo_only_model_scores_zero_on_every_question():
    for q in quality_suite.questions():
        assert not q.correct(q.prompt + " " + q.prompt.lower()), q.prompt
        assert not q.correct(quality_suite.strip_echo(q, q.prompt)), q.prompt


def test_echo_removal_keeps_real_answers():
    for q in quality_suite.questions():
        answer = {"mul": str(eval(q.expression or "0")), "add": str(eval(q.expression or "0"))
                  }.get(q.kind) or q.pattern.replace("[ií]", "i")
        assert q.correct(f"{q.prompt} {answer}") and q.correct_raw(answer), q.prompt
