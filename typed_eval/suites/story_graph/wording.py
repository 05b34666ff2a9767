"""What the stories are written with: names, groups, towns, titles, and the sentence templates of each kind of fact.
Data tables, kept as written."""

from __future__ import annotations

from typed_eval.suites.story_graph.graph import (
    Title,
)

__all__ = [
    "ADOPT_CARER_SIDE",
    "ADOPT_CHILD_SIDE",
    "AGE",
    "AMBIGUOUS",
    "BORN_TO_BOTH",
    "CHILD_SIDE",
    "COUNT",
    "DEED",
    "DEED_PAST",
    "FEMALE",
    "FOSTER_CARER_SIDE",
    "FOSTER_CHILD_SIDE",
    "FOSTER_THEN_ADOPT",
    "GODPARENT",
    "GROUPS",
    "GROUP_DEED",
    "INTRO",
    "MALE",
    "MAX_PEOPLE",
    "MEMBER",
    "MIN_PEOPLE",
    "OTHER_GROUP",
    "PARENT_SIDE",
    "PLACE",
    "SIBLING_GROUP",
    "SIBLING_PAIR",
    "SKILL",
    "SPOUSE_SENTENCES",
    "TITLE_TEXT",
    "TOWNS",
    "UNNAMED",
    "WHEN",
    "YEARS",
]


MIN_PEOPLE = 4
MAX_PEOPLE = 40

FEMALE = (
    "Anna", "Mara", "Lena", "Pia", "Ilse", "Nora", "Vera", "Greta", "Hedda", "Marta", "Sofia", "Tilde", "Agnes",
    "Edith", "Freya", "Ida", "Jolanda", "Katla", "Linnea", "Maud", "Nadia", "Olga", "Petra", "Quilla", "Runa",
    "Selma", "Thora", "Ulla", "Wanda", "Yara", "Zelda", "Astrid", "Brigid", "Dagny", "Elsa", "Fenna", "Gudrun",
    "Hilde", "Inga", "Jorun", "Kirsi", "Ragna", "Mette", "Nell", "Orla", "Rika", "Sigrid", "Tove", "Ebba",
    "Vibeke",
)  # fmt: skip
MALE = (
    "Tomas", "Bertil", "Leo", "Anders", "Bruno", "Caspar", "Dario", "Emil", "Felix", "Gunnar", "Hakon", "Ivar",
    "Jonas", "Karel", "Lars", "Magnus", "Nils", "Otto", "Pavel", "Rasmus", "Stellan", "Tobias", "Ulf", "Viggo",
    "Wilhelm", "Yannick", "Aksel", "Bjorn", "Conrad", "Dmitri", "Erik", "Finn", "Gustav", "Halvard", "Ingvar",
    "Jorgen", "Knut", "Lukas", "Matteo", "Niklas", "Oskar", "Pontus", "Ruben", "Sander", "Teodor", "Valter",
    "Arvid", "Birger", "Cosmo", "Edvin",
)  # fmt: skip
"""No name is a part of another, so a name found in a story is that character."""

GROUPS = (
    ("Guild of Lantern-Makers", "guild"),
    ("Order of the Silver Loom", "order"),
    ("Company of the Tide", "company"),
    ("Brotherhood of the Bell", "brotherhood"),
    ("Sisterhood of the Salt Road", "sisterhood"),
    ("Guild of Glassblowers", "guild"),
    ("Order of the Quiet Lamp", "order"),
    ("Company of Ropewalkers", "company"),
)
"""A group's name and what the story calls it for short ("the guild's fourteenth lady")."""

TOWNS = ("Varn", "Holmsby", "Eskerfield", "Saltmere", "Dunwick", "Brackhaven", "Ostervik", "Kelmouth")

TITLE_TEXT: dict[Title, str] = {
    Title.LEADER: "leader",
    Title.TREASURER: "treasurer",
    Title.SCRIBE: "scribe",
    Title.KEEPER_OF_THE_KEYS: "keeper of the keys",
    Title.STEWARD: "steward",
    Title.FOURTEENTH_LADY: "fourteenth lady",
    Title.MOTHER_OF_THE_HALL: "Mother of the Hall",
    Title.ELDER_BROTHER: "Elder Brother",
}

WHEN = (
    "in the year of the great flood",
    "the winter the river froze",
    "just before the harvest fair",
    "during the long drought",
    "in the spring of the comet",
    "the autumn the old mill burned",
    "when the salt fleet came home",
)
PLACE = (
    "in the lane behind the tannery",
    "above the bakery on the square",
    "in a cottage by the harbour",
    "at the edge of the marsh",
    "in the tall house by the bridge",
)
SKILL = ("to mend nets", "to read the stars", "to keep bees", "to carve spoons", "to sail by night", "to bake rye")
DEED = (
    "keeps the ledgers at the mill",
    "sails the ferry across the bay",
    "sells honey at the market",
    "repairs the bells of the chapel",
    "breeds the best goats in the valley",
)
DEED_PAST = (
    "left a silver ring at the chapel door",
    "sailed away with the salt fleet",
    "sang at every harvest fair",
    "was the best net-mender on the coast",
    "planted the pear tree behind the house",
)
GROUP_DEED = ("share a house by the mill", "run the ferry together", "keep the old orchard")
YEARS = ("two", "three", "five", "seven", "twelve", "twenty")
AGE = ("a baby", "two", "five", "seven", "barely walking")
COUNT = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")

# Sentence templates: {x}, {x_he}, {x_his}, {x_son}... name a character and the words that fit them (see
# `words_for`); {carer} names one or two people, with {carer_his}, {carer_them}, {carer_mother}.
SPOUSE_SENTENCES: tuple[str, ...] = (
    "{a} married {b} {when}.",
    "{a} and {b} have been married for {years} years.",
    "{a} is {b}'s {a_husband}.",
    "{a} lives with {a_his} {b_husband} {b} {place}.",
    "{b} took {a} as {b_his} {a_husband} {when}.",
)
PARENT_SIDE: tuple[str, ...] = (
    "{p} raised {p_his} {c_son} {c} {place}.",
    "{p} is the {p_mother} of {c}.",
    "{p} taught {p_his} {c_son} {c} {skill}.",
    "{p} still worries about {p_his} {c_son} {c}.",
)
CHILD_SIDE: tuple[str, ...] = (
    "{c} is {p}'s {c_boy}.",
    "{c}, {p}'s {c_son}, {deed}.",
    "{c} learned {skill} from {c_his} {p_mother} {p}.",
    "{c} still visits {c_his} {p_mother}, {p}, every market day.",
)
BORN_TO_BOTH: tuple[str, ...] = (
    "{c} was born to {p} and {q} {when}.",
    "{p} and {q} have a {c_son}, {c}.",
    "{c} is the {c_son} of {p} and {q}.",
)
SIBLING_PAIR: tuple[str, ...] = (
    "{a} and {b} are {pair}.",
    "{a} often quarrels with {a_his} {b_brother} {b}.",
    "{a}'s {b_brother}, {b}, {deed}.",
)
SIBLING_GROUP: tuple[str, ...] = (
    "{names} are siblings.",
    "{first} has {count} siblings: {rest}.",
    "The siblings {names} {group_deed}.",
)
ADOPT_CARER_SIDE: tuple[str, ...] = (
    "{carer} adopted {c} {when}.",
    "{carer} adopted {c} when {c_he} was {age}.",
    "{carer} adopted a {c_boy} named {c}.",
)
ADOPT_CHILD_SIDE: tuple[str, ...] = (
    "{c} was adopted by {carer} {when}.",
    "{c} is the adopted {c_son} of {carer}.",
    "{c} grew up as the adopted {c_son} of {carer}.",
)
FOSTER_CARER_SIDE: tuple[str, ...] = (
    "{carer} took in {c} as a foster child {when}.",
    "{carer} fostered {c} for {years} years.",
    "{carer} became {c}'s foster {carer_mother} {when}.",
)
FOSTER_CHILD_SIDE: tuple[str, ...] = (
    "{c} is the foster {c_son} of {carer}.",
    "{c} was taken in as a foster child by {carer} {when}.",
    "{c} lived with {carer} as a foster child for {years} years.",
)
FOSTER_THEN_ADOPT: tuple[str, ...] = (
    "{carer} took in {c} as a foster child, and {years} years later adopted {c_him}.",
    "{c} came to {carer} as a foster child and was adopted by {carer_them} {when}.",
)
GODPARENT: tuple[str, ...] = (
    "{x} stood as {x_godmother} to {y}.",
    "{y}'s {x_godmother} is {x}.",
)
UNNAMED: tuple[str, ...] = (
    "{x}'s {kin}, whose name nobody remembers, {deed_past}.",
    "Nobody remembers the name of {x}'s {kin}, who {deed_past}.",
    "{x} never learned the name of {x_his} {kin}, who {deed_past}.",
)
AMBIGUOUS: dict[str, tuple[str, ...]] = {
    "aunt_or_cousin": (
        "{x}, whom some call {y}'s {x_aunt} and others {y_his} cousin, {deed}.",
        "Some say {x} is {y}'s {x_aunt}, others that {x_he} is only {y_his} cousin.",
    ),
    "sibling_or_cousin": (
        "{x}, whom some call {y}'s {x_brother} and others {y_his} cousin, {deed}.",
        "Half the town says {x} is {y}'s {x_brother}; the other half says {x_he} is {y_his} cousin.",
    ),
    "parent_or_aunt": (
        "{y} calls {x} {x_mother}, though others say {x} is only {y_his} {x_aunt}.",
        "Some say {x} is {y}'s {x_mother}, others that {x_he} is only {y_his} {x_aunt}.",
    ),
    "adopted_or_fostered": (
        "Some say {x} adopted {y}; others insist {x_he} only took {y_him} in as a foster child.",
        "Whether {x} adopted {y} or only fostered {y_him}, nobody in town agrees.",
    ),
}
MEMBER: tuple[str, ...] = (
    "{x} serves the {group} as its {title}.",
    "The {group} made {x} its {title} {when}.",
    "In the {group}, {x} holds the rank of {title}.",
    "{x}, the {short}'s {title}, {deed}.",
)
INTRO: tuple[str, ...] = (
    "In the harbour town of {town}, the {group} keeps its hall above the fish market.",
    "The {group} has met in the old granary of {town} for as long as anyone can tell.",
    "Everyone in {town} knows the {group} and its hall by the bridge.",
)
OTHER_GROUP: tuple[str, ...] = (
    "Across the river stands the hall of the {other}.",
    "The {other} has its own hall in {town}, on the far side of the square.",
)
