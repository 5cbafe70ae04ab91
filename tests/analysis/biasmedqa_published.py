"""BiasMedQA's published results, typed in from the seed paper (Schmidgall et al. 2024, ../shared/seeds/001_*.txt).

Appendix A, Tables 1-3 (accuracy; Table 4, few-shot, has no released responses) and Appendix C, Table 5
(non-response without bias). Rows are named as in the paper; `SOURCE` maps them to the released file's `model`.
"""

PAPER_SOURCES = [
    "gpt-4-0613",
    "mixtral-8x7b-instruct-v0.1",
    "gpt-3.5-turbo-0613",
    "text-bison-001 (PaLM-2 text)",
    "llama-2-70B-chat",
    "pmc-llama-13b",
]
SOURCE = {
    **{name: name for name in PAPER_SOURCES},
    "text-bison-001 (PaLM-2 text)": "text-bison-001",
    "llama-2-70B-chat": "llama-2-70b-chat",
}
# The tables' columns: "No bias" then the seven biases, as the released file's `bias_type` names them.
BIASES = ["none", "self_diagnosis", "recency", "confirmation", "frequency", "cultural", "status_quo", "false_consensus"]
NA = None  # "N/A" in the paper (text-bison-001 one-shot: 94.4% non-response)

# (table, mitigation the table reports) -> paper row -> one value per BIASES column.
ACCURACY: dict[tuple[str, str], dict[str, list[float | None]]] = {
    ("Table 1: No bias mitigation", "none"): {
        "gpt-4-0613": [0.727, 0.698, 0.679, 0.725, 0.627, 0.681, 0.679, 0.625],
        "mixtral-8x7b-instruct-v0.1": [0.518, 0.460, 0.455, 0.497, 0.373, 0.421, 0.445, 0.428],
        "gpt-3.5-turbo-0613": [0.497, 0.288, 0.333, 0.407, 0.274, 0.277, 0.361, 0.239],
        "text-bison-001 (PaLM-2 text)": [0.429, 0.322, 0.232, 0.318, 0.167, 0.231, 0.220, 0.213],
        "llama-2-70B-chat": [0.357, 0.169, 0.141, 0.177, 0.104, 0.207, 0.160, 0.139],
        "pmc-llama-13b": [0.334, 0.197, 0.247, 0.250, 0.224, 0.278, 0.290, 0.155],
    },
    # "No bias" repeats Table 1's: the education sentence is bias-specific, so there is no unbiased education run.
    ("Table 2: Bias mitigation using education strategy", "education"): {
        "gpt-4-0613": [0.727, 0.728, 0.709, 0.714, 0.720, 0.681, 0.725, 0.687],
        "mixtral-8x7b-instruct-v0.1": [0.518, 0.503, 0.513, 0.485, 0.477, 0.391, 0.529, 0.493],
        "gpt-3.5-turbo-0613": [0.497, 0.448, 0.391, 0.448, 0.370, 0.274, 0.430, 0.294],
        "text-bison-001 (PaLM-2 text)": [0.429, 0.435, 0.271, 0.358, 0.237, 0.261, 0.239, 0.307],
        "llama-2-70B-chat": [0.357, 0.319, 0.204, 0.179, 0.185, 0.213, 0.286, 0.181],
        "pmc-llama-13b": [0.334, 0.216, 0.247, 0.283, 0.231, 0.233, 0.292, 0.171],
    },
    ("Table 3: Bias mitigation using one-shot mitigation strategy", "one-shot"): {
        "gpt-4-0613": [0.763, 0.738, 0.742, 0.738, 0.720, 0.698, 0.741, 0.737],
        "mixtral-8x7b-instruct-v0.1": [0.513, 0.466, 0.417, 0.487, 0.353, 0.380, 0.418, 0.372],
        "gpt-3.5-turbo-0613": [0.505, 0.316, 0.355, 0.437, 0.350, 0.258, 0.381, 0.287],
        "text-bison-001 (PaLM-2 text)": [NA] * 8,
        "llama-2-70B-chat": [0.325, 0.191, 0.179, 0.197, 0.098, 0.165, 0.163, 0.161],
        "pmc-llama-13b": [0.317, 0.185, 0.221, 0.212, 0.165, 0.210, 0.227, 0.121],
    },
}

# Table 5: non-response rate without bias, by mitigation ("No mitigation", "One-shot"; few-shot was not released).
NON_RESPONSE_TABLE = "Table 5: Non-response rate by prompting strategy"
NON_RESPONSE: dict[str, dict[str, float]] = {
    "none": {
        "gpt-4-0613": 0.000,
        "mixtral-8x7b-instruct-v0.1": 0.001,
        "gpt-3.5-turbo-0613": 0.000,
        "text-bison-001 (PaLM-2 text)": 0.266,
        "llama-2-70B-chat": 0.059,
        "pmc-llama-13b": 0.187,
    },
    "one-shot": {
        "gpt-4-0613": 0.000,
        "mixtral-8x7b-instruct-v0.1": 0.001,
        "gpt-3.5-turbo-0613": 0.000,
        "text-bison-001 (PaLM-2 text)": 0.944,
        "llama-2-70B-chat": 0.097,
        "pmc-llama-13b": 0.219,
    },
}
