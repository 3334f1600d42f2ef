"""toolgap — model-adaptive tool necessity and the knowing–doing gap in LLM tool use.

Cheng, Fan, JafariRaviz, Rezaei, Feizi (arXiv 2605.14038): label tool necessity per model from its own
samples without tools, compare it with the tool calls it makes, and probe its hidden states to split
each mismatch into a cognition error or a cognition→action transition error.
"""

from toolgap.behaviour import actions, hidden_states, is_correct, necessity
from toolgap.model import TOOL_CHAT_TEMPLATE, load_tool_model, save_tool_model, train_tool_model
from toolgap.parse import parse_tool_call
from toolgap.probes import ProbeResult, direction_geometry, probe_layers, transition_table
from toolgap.world import TOOLS, Question, ToolWorld, load_questions

__all__ = [
    "TOOLS",
    "TOOL_CHAT_TEMPLATE",
    "ProbeResult",
    "Question",
    "ToolWorld",
    "actions",
    "direction_geometry",
    "hidden_states",
    "is_correct",
    "load_questions",
    "load_tool_model",
    "necessity",
    "parse_tool_call",
    "probe_layers",
    "save_tool_model",
    "train_tool_model",
    "transition_table",
]
__version__ = "0.1.0"
