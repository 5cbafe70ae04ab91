#!/usr/bin/env python3
"""Derive the committed demo data files (datasets/demo_data/) from the seed datasets in ../shared.

Usage: .venv/bin/python scripts/make_demo_data.py [--shared ../shared/datasets] [--out datasets/demo_data]

Standard library only, deterministic: running it again on the same inputs rewrites identical files.
The inputs are pinned by SHA-256, so a changed input fails loudly instead of silently changing the demo.
How each output is built is described in datasets/demo_data/SOURCE.md; keep the two in step.
"""

import argparse
import csv
import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The official PhysioNet files (their SHA-256 equal PhysioNet's SHA256SUMS.txt) and the third-party outputs.
INPUTS = {
    "qpain/data_acute_cancer.csv": "dd63f6d749b3fedc1b3bfe719062f39819d8d9669499337397b71c1c9acfafc2",
    "qpain/data_acute_non_cancer.csv": "cd5fd173ec074d2292a0016e4a540122ea3e89d0bf3637cb4ee02048558d0c7e",
    "qpain/data_chronic_non_cancer.csv": "1b5d58e4349c916d4604233d023386997454eff4430373e7b49d4825c240d929",
    "qpain/names_races_genders.json": "61e8fc78e86f5ac491269e1b15f6ba16e64d722694f8852513c28187b53adf28",
    "qpain/LICENSE.txt": "e96e89b8862cbc9cd83a1689947ab359614fba6f82f680fc06fefda583c1f485",
    "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl": (
        "ef368d3150462420205a037a6b13007ba53ed18444b104f3e8ff251c3446e34a"
    ),
    # MedQA-USMLE test split (MIT), as BiasMedQA copied it from jind11/MedQA.
    "biasmedqa/questions/test.jsonl": "cfa75cbcc53c29b023752b0a395ff49d8202121041392735ae44771a5ec734a3",
    "equitymedqa/voak222_equitymedqa_fairness_review_sample.csv": (
        "1ebd3d543e5694d4ff1c40a57a7cff3811f07a652c79827a6de8c9c10cf2a8df"
    ),
    "equitymedqa/voak222_equitymedqa_paired_prompt_review_sample.csv": (
        "cb35837a15914be8e6dcd8b6e1343a3667800285c75513eb5b6395bf6d40629e"
    ),
}

# Context id (the CSV's stem without "data_", as the Q-Pain importer names questions) -> the outputs' label.
CONTEXTS = {
    "acute_cancer": "Acute Cancer Pain",
    "acute_non_cancer": "Acute Non Cancer Pain",
    "chronic_non_cancer": "Chronic Non Cancer Pain",
}
VIGNETTES_PER_CONTEXT = 2
RACES = ["Black", "White", "Asian", "Hispanic"]
GENDERS = ["man", "woman"]
# Counterfactual pairs within each vignette: (race, gender) of question 1 and question 2.
PAIRS = [
    (("Black", "woman"), ("White", "man")),
    (("Black", "man"), ("White", "man")),
    (("Asian", "man"), ("Hispanic", "man")),
    (("Hispanic", "woman"), ("Hispanic", "man")),
]
DEEPSEEK_MODEL = "deepseek-32k"
DEEPSEEK_PARAMETERS = {"temperature": 0, "max_tokens": 150}
DEEPSEEK_REPOSITORY = "github.com/GiovanniBonadeo/Q_pain_analysis @ ed75253da120c622954a634da44f472f4d11c93a"

COPIED = {
    "equitymedqa/voak222_equitymedqa_fairness_review_sample.csv": "equitymedqa_fairness_sample.csv",
    "equitymedqa/voak222_equitymedqa_paired_prompt_review_sample.csv": "equitymedqa_paired_sample.csv",
    "qpain/LICENSE.txt": "LICENSE-CC-BY-SA-4.0.txt",
    "biasmedqa/questions/test.jsonl": "medqa_usmle_test.jsonl",
}


def check_inputs(shared: Path) -> None:
    for relative, expected in INPUTS.items():
        digest = hashlib.sha256((shared / relative).read_bytes()).hexdigest()
        if digest != expected:
            sys.exit(f"{shared / relative}: SHA-256 {digest} is not the pinned {expected}; review the change first")


def profile_id(race: str, gender: str) -> str:
    return f"{race.lower()}-{gender}"


def question_id(context_id: str, vignette_idx: int, race: str, gender: str) -> str:
    return f"{context_id}-{vignette_idx}-{profile_id(race, gender)}"


def fill(text: str, *, name: str, race: str, gender: str, pronouns: dict) -> str:
    """The official Q-Pain notebook's demographic fill of a vignette's placeholders."""
    return (
        text.replace("[gender]", gender)
        .replace("[possessive]", pronouns["possessive"][gender])
        .replace("[subject]", pronouns["subject"][gender])
        .replace("[race]", race)
        .replace("Patient D", name)
    )


def is_parsed(record: dict) -> bool:
    """The run's parser found a Yes/No answer and an explanation (it left junk such as '' or ':' otherwise)."""
    return record.get("answer") in ("Yes", "No") and (record.get("explanation") or "").startswith("Explanation: ")


def select_vignettes(records: list[dict]) -> dict[str, list[int]]:
    """Per context, the vignettes whose 8 profiles all parsed, with the most distinct (answer, dosage) outcomes.

    Disagreement across profiles is what the counterfactual rubric is for, so the demo favours it;
    SOURCE.md says so, since the selection is therefore not representative of the model.
    """
    chosen = {}
    for context_id, label in CONTEXTS.items():
        by_vignette: dict[int, list[dict]] = {}
        for record in records:
            if record["context"] == label:
                by_vignette.setdefault(record["vignette_idx"], []).append(record)
        complete = [idx for idx, group in by_vignette.items() if len(group) == 8 and all(map(is_parsed, group))]
        spread = {idx: len({(r["answer"], r.get("dosage")) for r in by_vignette[idx]}) for idx in complete}
        chosen[context_id] = sorted(sorted(complete, key=lambda idx: (-spread[idx], idx))[:VIGNETTES_PER_CONTEXT])
    return chosen


def deepseek_text(record: dict) -> str:
    """The answer as the run's parser recorded it: answer word, 'Dosage: <High|Low>' when parsed, explanation."""
    lines = [record["answer"]]
    if record.get("dosage"):
        lines.append(f"Dosage: {record['dosage']}")
    lines.append(record["explanation"])
    return "\n".join(lines)


def reference_text(row: dict, **profile) -> str:
    """'{Answer} Dosage: {Dosage}. {Explanation}' with the placeholders filled for this profile."""
    answer = row["Answer"].strip()
    # The chronic CSVs write "Yes" where the acute ones write "Yes.": a full stop keeps the sentence readable.
    answer = answer if answer.endswith(".") else f"{answer}."
    explanation = fill(row["Explanation"].strip(), **profile)
    return f"{answer} Dosage: {row['Dosage'].strip()}. {explanation}"


def split_open_prompt(open_prompt: str) -> tuple[str, str]:
    """'Vignette: V \\nQuestion: Q\\nAnswer:' -> (V, Q)."""
    body = open_prompt.removeprefix("Vignette: ").removesuffix("\nAnswer:")
    vignette, question = body.split("\nQuestion: ")
    return vignette.strip(), question.strip()


def load_records(shared: Path) -> list[dict]:
    path = shared / "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def gold_rows(shared: Path, context_id: str) -> list[tuple[int, dict]]:
    """The context's "Yes" vignettes as (CSV line, row): vignette_idx is the index in this list."""
    with (shared / "qpain" / f"data_{context_id}.csv").open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    return [(line, row) for line, row in enumerate(rows, start=2) if row["Answer"].strip().startswith("Yes")]


def check_same_case(record: dict, gold: dict, where: str, profile: dict) -> None:
    """The run's open prompt must be the CSV row filled for this profile, or the reference answers another case."""
    expected = (fill(gold["Vignette"].strip(), **profile), fill(gold["Question"].strip(), **profile))
    if split_open_prompt(record["open_prompt"]) != expected:
        sys.exit(f"{record['source_path']}: the open prompt is not {where} filled for this profile")


def deepseek_row(qid: str, record: dict) -> dict:
    log_probabilities = {key: record.get(key) for key in ("prob_yes", "prob_no", "prob_high", "prob_low")}
    return {
        "question_id": qid,
        "answer": deepseek_text(record),
        "model": DEEPSEEK_MODEL,
        "prompt": record["closed_prompt"] + record["open_prompt"],
        "parameters": DEEPSEEK_PARAMETERS,
        "log_probabilities": log_probabilities,
        "log_probabilities_base": "natural logarithm (the source names them prob_*)",
        "parsed_answer": record["answer"],
        "parsed_dosage": record.get("dosage") or "",
        "source_file": f"{DEEPSEEK_REPOSITORY} {record['source_path']}",
    }


def pair_row(context_id: str, idx: int, first: tuple[str, str], second: tuple[str, str], texts: dict) -> dict:
    varies = " and ".join(axis for axis, a, b in zip(("race", "gender"), first, second, strict=True) if a != b)
    return {
        "id": f"{context_id}-{idx}-{profile_id(*first)}-vs-{profile_id(*second)}",
        "question": texts[first],
        "question_2": texts[second],
        "varies": varies,
        "question_1_id": question_id(context_id, idx, *first),
        "question_2_id": question_id(context_id, idx, *second),
    }


def build(shared: Path) -> dict[str, list[dict]]:
    pronouns = json.loads((shared / "qpain/names_races_genders.json").read_text(encoding="utf-8"))["pronouns"]
    records = load_records(shared)
    by_key = {(r["context"], r["vignette_idx"], r["race"], r["gender"]): r for r in records}
    built: dict[str, list[dict]] = {"questions": [], "pairs": [], "deepseek": [], "reference": []}
    for context_id, indices in select_vignettes(records).items():
        golds = gold_rows(shared, context_id)
        for idx in indices:
            csv_line, gold = golds[idx]
            where = f"data_{context_id}.csv line {csv_line}"
            texts = {}
            for race in RACES:
                for gender in GENDERS:
                    record = by_key[(CONTEXTS[context_id], idx, race, gender)]
                    profile = {"name": record["name"], "race": race, "gender": gender, "pronouns": pronouns}
                    check_same_case(record, gold, where, profile)
                    vignette, question = split_open_prompt(record["open_prompt"])
                    qid = question_id(context_id, idx, race, gender)
                    texts[(race, gender)] = f"{vignette}\n\n{question}"
                    built["questions"].append(
                        {
                            "id": qid,
                            "question": texts[(race, gender)],
                            "context": CONTEXTS[context_id],
                            "vignette_idx": idx,
                            "race": race,
                            "gender": gender,
                            "name": record["name"],
                        }
                    )
                    built["deepseek"].append(deepseek_row(qid, record))
                    built["reference"].append(
                        {
                            "question_id": qid,
                            "answer": reference_text(gold, **profile),
                            "qpain_file": where,
                            "gold_answer": gold["Answer"].strip(),
                            "gold_dosage": gold["Dosage"].strip(),
                        }
                    )
            built["pairs"].extend(pair_row(context_id, idx, first, second, texts) for first, second in PAIRS)
    return built


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def jsonl_text(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "datasets")
    parser.add_argument("--out", type=Path, default=REPO / "datasets" / "demo_data")
    args = parser.parse_args()
    check_inputs(args.shared)
    built = build(args.shared)
    args.out.mkdir(parents=True, exist_ok=True)
    outputs = {
        "qpain_demo_questions.csv": csv_text(built["questions"]),
        "qpain_demo_pairs.csv": csv_text(built["pairs"]),
        "qpain_demo_answers_deepseek.jsonl": jsonl_text(built["deepseek"]),
        "qpain_demo_answers_reference.jsonl": jsonl_text(built["reference"]),
    }
    for name, text in outputs.items():
        (args.out / name).write_text(text, encoding="utf-8")
    for source, target in COPIED.items():
        shutil.copyfile(args.shared / source, args.out / target)
    for name in sorted([*outputs, *COPIED.values()]):
        print(hashlib.sha256((args.out / name).read_bytes()).hexdigest(), name)


if __name__ == "__main__":
    main()
