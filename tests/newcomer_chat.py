"""A newcomer's first chat (issue 46), written for the tests: five lasting facts said in
passing among requests and acknowledgements, one of them about "she", the daughter named two
messages before. A module of its own so that any test directory can import it."""

from __future__ import annotations

from typing import Any

CHAT: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": "hi! first time using this. can you help me plan a birthday party for my "
        "daughter Zoe?",
    },
    {"role": "assistant", "content": "I'd love to help! How old is she turning?"},
    {"role": "user", "content": "she's turning 7 next month. she loves horses lol"},
    {"role": "assistant", "content": "A pony theme could be lovely. Where will you hold it?"},
    {"role": "user", "content": "makes sense. we live in a flat in Glasgow so probably a hall"},
    {"role": "assistant", "content": "A community hall is a good choice. How many guests?"},
    {
        "role": "user",
        "content": "around 15 kids. I'm a primary school teacher so I know how loud that gets",
    },
    {"role": "assistant", "content": "You're well prepared then! Any food restrictions?"},
    {"role": "user", "content": "yes, Zoe is lactose intolerant, so no ice cream obviously"},
    {"role": "assistant", "content": "Dairy-free ice cream and fruit lollies work well."},
    {
        "role": "user",
        "content": "that's practical. my husband Ravi runs a curry house, funny enough",
    },
    {"role": "assistant", "content": "Perfect, that covers the food!"},
    {"role": "user", "content": "great, thanks so much"},
    {"role": "assistant", "content": "You're welcome, have a wonderful party!"},
]

#: The words of each fact said in passing, as a kept fact holds them.
FACTS = ("Zoe loves horses", "Glasgow", "primary school teacher", "lactose intolerant", "Ravi")
#: What the user only said to the assistant's answers, never a fact.
ACKNOWLEDGED = ("makes sense", "that's practical", "thanks")

__all__ = ["ACKNOWLEDGED", "CHAT", "FACTS"]
