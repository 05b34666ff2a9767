"""lineage-bench (github.com/fairydreaming/lineage-bench, MIT) as a suite: quizzes on graphs of 4 to 2,048 people
connected by ancestor and descendant relations, posed as multiple choice and read and scored as lineage-bench does.

The generator writes the same bytes as `lineage_bench.py` with the same arguments (its CSV, `\\r\\n` line ends), and
a dataset's MD5 is that of those bytes. In the text modes a reply is read as `compute_metrics.py` reads it: strictly
(the first `<ANSWER>d</ANSWER>` with one digit), with its `--relaxed` patterns reported beside the score.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import random
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

import farel_bench
from typed_eval.core.datasets import Dataset, survey
from typed_eval.core.errors import InputError, OneLineArgumentParser
from typed_eval.core.sources import read_csv_source
from typed_eval.core.suite import Suite
from typed_eval.core.tasks import Task, TextReader
from typed_eval.schemas import Case, DatasetInfo, GroupScore, Quiz, RunSummary, Scores
from typed_eval.suites.multiple_choice import OptionAnswer, multiple_choice_task, option_baseline, show_option

__all__ = [
    "DEFAULT_LENGTHS",
    "DEFAULT_PROMPT",
    "LINEAGE",
    "LINEAGE_TASK",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "NONE_CORRECT",
    "RELATIONS",
    "SUITE",
    "LineageParams",
    "case_from_row",
    "csv_line",
    "csv_rows",
    "generate",
    "generated_dataset",
    "group_name",
    "main",
    "numbered",
    "options_of",
    "quiz_case",
    "read_dataset",
    "relaxed_answer",
    "size_of_group",
    "size_scores",
    "strict_answer",
]

SUITE = "lineage"
MIN_LENGTH, MAX_LENGTH = 4, 2048
DEFAULT_LENGTHS = (8, 16, 32, 64)
"""The sizes lineage-bench's author runs (`-s -n 50 -r 42` each): 800 quizzes."""

DEFAULT_PROMPT = (
    "Given the following lineage relationships:\n{quiz_relations}\n{quiz_question}\nSelect the correct answer:\n"
    "{quiz_answers}\n" + farel_bench.TAG_INSTRUCTION
)

RELATIONS = ("ANCESTOR", "DESCENDANT", "COMMON_ANCESTOR", "COMMON_DESCENDANT")
"""The four quiz classes, in the order lineage-bench generates them and lists their options."""

_OPTIONS = {
    "ANCESTOR": "{a} is {b}'s ancestor.",
    "DESCENDANT": "{a} is {b}'s descendant.",
    "COMMON_ANCESTOR": "{a} and {b} share a common ancestor.",
    "COMMON_DESCENDANT": "{a} and {b} share a common descendant.",
}
NONE_CORRECT = "None of the above is correct."
"""Always the last option, and never the correct one."""

_FEW_NAMES_UP_TO = 200
"""Up to this size lineage-bench draws from the first 100 names of each list (its quizzes from before the lists
grew), beyond it from all 2,048."""


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_MORE_MALE_NAMES = _names(
    "Johnny Caleb Shawn Travis Louis Isaac Phillip Lucas Luke Craig Cameron Victor Carlos Liam Cody Jimmy Danny "
    "Luis Todd Martin Evan Jackson Joel Nathaniel Harry Alex Dale Howard Adrian Hunter Angel Antonio Allen Ian "
    "Rodney Curtis Stanley Chad Aiden Theodore Jayden Tony Fred Isaiah Derek Leonard Julian Jesus Marcus Jeffery "
    "Connor Steve Ernest Glenn Ricky Marvin Frederick Wesley Owen Francis Jeremiah Troy Norman Dustin Earl Oliver "
    "Melvin Jared Calvin Edwin Clarence Lee Randall Mike Shane Sebastian Eddie Wyatt Carter Gavin Leo Corey Jay "
    "Miguel Blake Ronnie Levi Barry Alfred Dean Dominic Landon Chase Tommy Manuel Oscar Jon Ray Seth Herbert "
    "Trevor Leroy Brett Mitchell Darrell Don Erik Devin Bernard Micheal Xavier Clifford Jerome Cole Bill Warren "
    "Leon Mario Derrick Chris Ricardo Max Colton Alejandro Marc Brent Eli Jorge Jim Francisco Ivan Garrett Alvin "
    "Josiah Brayden Gordon Colin Charlie Andre Cory Grant Edgar Clayton Franklin Carson Lloyd Jake Tristan Bryce "
    "Gene Parker Nolan Diego Spencer Tom Jeff Vernon Lewis Aidan Maurice Preston Casey Duane Floyd Ruben Grayson "
    "Roberto Glen Gilbert Micah Reginald Eduardo Hayden Hector Cooper Lance Clyde Javier Darren Elias Jaxon Omar "
    "Jimmie Maxwell Damian Miles Everett Fernando Neil Johnathan Tanner Dan Harvey Nicolas Mateo Brady Karl "
    "Darryl Lester Brendan Herman Dakota Andres Allan Hudson Lincoln Pedro Abraham Andy Asher Clinton Milton Bob "
    "Raul Kurt Roman Emmanuel Sam Ayden Lonnie Leonardo Marshall Harrison Roland Rafael Kaleb Brad Arnold Dalton "
    "Tim Jace Johnnie Ashton Rick Santiago Giovanni Sergio Collin Tyrone Jaden Ezra Chester Greg Cecil Brody Drew "
    "Erick Cesar Jonah Dwayne Bryson Byron Lorenzo Guy Marco Ross Dwight Armando Mathew Angelo Ramon Elmer Devon "
    "Terrence Shaun Jaime Terrance Easton Nelson Wade Ted Kent Freddie Felix Kirk Perry Cristian Caden Ezekiel "
    "Kaden Damon Israel Stuart Jonathon Kayden Dillon Wallace Dallas Julius Kristopher Daryl Claude Ben Damien "
    "Rickey Jaxson Julio Hugh Sidney Weston Alberto Malcolm Emmett Donnie Abel Gage Simon Dominick Donovan "
    "Braxton Axel Clifton Enrique Silas Ryder Malachi Trenton Fredrick Sawyer Kai Dave Conner Bennett Arturo "
    "Alfredo Bentley Josue Geoffrey Gerard Camden Alec Gerardo Rex Elliott Myles Zane Luca Joey Darius Jameson "
    "Colby Chance Willard Greyson Graham Beau Kenny Marcos Virgil Trent Maverick Elliot Kelvin Neal Declan Bryant "
    "Kerry Tucker Morris Lyle Rene Rudy Leland Emanuel Wendell Jasper Dante Noel Garry Malik Kaiden Salvatore "
    "Jude Salvador Ty Pablo Orlando Tyson Emilio Randolph Griffin Braden Roderick Otis August Amir Dawson Benny "
    "Luther Earnest Clark Carlton Lane Ernesto Grady Brooks Brock Sammy Forrest Maddox Fabian Nick Jermaine "
    "Bennie Skyler Cedric Frankie Loren Rudolph Quentin Lukas Kingston Ira Hubert Waylon Ismael Trey Zion Alton "
    "Corbin Saul Jayce Gustavo Jalen Myron Cayden Alonzo Edmund Alfonso Gael Jaylen Nickolas Ellis Delbert Junior "
    "Archie Desmond Keegan Willis Wilson Kameron Reid Homer Rowan Gregg Clay Ron Kyler Horace Terrell Drake "
    "Xander Demetrius Moses Wilbur Ryker Chandler Pete Jayson Sheldon Lowell Dexter Toby Terence Walker Harley "
    "Esteban Emiliano Conrad King Rodolfo Jamal Ken Dane Brennan Darin Laurence Hugo Reed Sylvester Milo Joaquin "
    "Sherman Rylan Roosevelt Marty Jaiden Sterling Lamar Kendrick Jakob Clint Mack Maximus Zackary Ali Bradford "
    "Rory Cade Blaine Teddy Guillermo Wilbert Solomon Rhett River Marlon Quinton Felipe Bret Zachery Royce "
    "Zachariah Irvin Moises Darrin Finn Adan Ervin Brantley Judah Lionel Cornelius Davis Randal Holden Deandre "
    "Tommie Heath Darrel Anderson Carroll Darnell Tomas Winston Gilberto Stewart Branden Rocky Barrett Cruz "
    "Stephan Zayden Mickey Amos Doyle Will Antoine Conor Rocco Freddy Zander Dewayne Landen Irving Dewey Dick "
    "Rodrigo Quincy Matteo Timmy Van Brenden Jerald Jonas Amari Johnathon Tobias Jarrod Rogelio Karter Ramiro "
    "Rufus Paxton Reuben Cash Colt Marquis Vance Louie Rolando Darwin Titus Leonel Lamont Cary Elbert Adriel Kody "
    "Cyrus Nikolas Mauricio Issac Jase Jarrett Dorian Beckett Doug Noe Khalil Monte Merle Thaddeus Theo Isiah "
    "Boyd Romeo Enzo Tate Jax Otto Matt Messiah Caiden Bert Gunner Harlan Percy Archer Buddy Keaton Phoenix "
    "Jefferson Nathanael Tristen Aden Orville Robbie Rodger Raphael Eldon Wilfred Remington Maximiliano Kade Kobe "
    "Stefan Jett Kristian Brendon Vicente Reynaldo Denis Orion Jamison Prince Thiago Duncan Nehemiah Vaughn "
    "Derick Reece Edmond Emil Ace Legend Ahmad Justice Marlin Aron Uriel Garland Karson Sonny Gideon Scotty Knox "
    "Matias Cohen Anton Dion Woodrow Ignacio Efrain Sammie Nash Phil Marcel Kurtis Jess Ari Abram Chuck Muhammad "
    "Pierre Ezequiel Luka Braylon Mohamed Keenan Rusty Zackery Pierce Major Maximilian Kane Burton Porter Javon "
    "Elton Asa Santos Jarvis Kareem Cleveland Elvin Ronan Damion Humberto Gunnar Elvis Isaias Kellen Rickie Iker "
    "Curt Darian Adonis Augustus Arlo Alvaro Ahmed Nico Moshe Rashad Aldo Nasir Josh Tyrell Loyd Bart Deshawn "
    "Murray Jamar Mohammad Carey Denver Grover Colten Cullen Ulysses Brayan Kolton Galen Ed Ernie Donte Adolfo "
    "Kieran Norbert Jeffry Ibrahim Coleman Agustin Brice Erwin Royal Denny Quintin Monty Lawson Deon Mohammed "
    "Brenton Alden Atticus Hank Houston Atlas Al Bryon Camron Markus Hal Ronny Emory Joesph Tyree Kris Gerry Coy "
    "Luciano Dayton Kory Bruno Kyrie Osvaldo Beckham Trevon Donnell Braydon Jensen Hayes Carlo Hans Roscoe Elwood "
    "Scot Alphonso Kash Jamari Norris Killian Gus Jordon Gianni Kirby Ned Braeden Izaiah Devan Wiley Benito Eddy "
    "Demarcus Fletcher Milan Kason Armani Jarred Harris Chadwick Layne Davon Garret Brycen Malakai Augustine "
    "Johan Domingo Bo Charley Donny Truman Trace Johnie Russel Davion Mitchel Forest Julien Daxton Kermit Antwan "
    "Sullivan Thurman Hollis Gino Merlin Irwin Jayceon Alijah Vito Vince Nigel Armand Sanford Braylen Deangelo "
    "Ryland Reggie Talon Mathias Omari Jarod Mekhi Rhys Emmitt Frederic Niko Tevin Kayson Yahir Odell Cristopher "
    "Devonte Triston Benson Judson Barney Erich Matthias Korey Carmelo Wilmer Weldon Kamden Ulises Alonso Mikel "
    "Carmine Rohan Rigoberto Finnegan Ward Monroe Landyn Kolby Kian Jamel Delmar Jaron Hassan Marcelo Theron Odin "
    "Santino Shelton Samson Denzel Maynard Lucian Octavio Dirk Kenton Chaim Cornell Zayne Linwood Bodhi Jairo "
    "Jacoby Daren Shayne "
)
_MORE_FEMALE_NAMES = _names(
    "Tiffany Kathy Tammy Rose Crystal Taylor Jane Erin Ava Alyssa Allison Bonnie Shannon Robin Lillian Tina Dawn "
    "Phyllis Peggy Mia Paula Audrey Jamie Leslie Valerie Anne Lois Wendy Connie Wanda Brianna Vanessa Courtney "
    "Cindy Melanie Jasmine Ella Ruby Tracy Monica Elaine Norma Rita April Alexandra Sheila Leah Chloe Erica "
    "Sherry Alicia Michele Ellen Mildred Amelia Morgan Eleanor Kristen Suzanne Caroline Katie Annie Irene Joanne "
    "Rhonda Jill Veronica Holly Darlene Carrie Gail Sylvia Anita Josephine Brooke Dana Louise Dolores Claire "
    "Marjorie Debbie Sally Eva Renee Savannah Lynn Kim Kristin Lorraine Jo Vivian Geraldine Tara Sydney Madeline "
    "Hailey Cathy Cassandra Juanita Molly Regina Laurie Kaitlyn Eileen Lily Clara Stacy June Chelsea Sofia "
    "Colleen Esther Lucy Haley Annette Hazel Lindsey Beth Joann Naomi Vicki Avery Gina Roberta Lydia Destiny "
    "Carla Kelsey Yvonne Stacey Shelby Jenna Heidi Terri Rosemary Loretta Zoe Jeanne Paige Maureen Faith Jeanette "
    "Edith Sabrina Addison Florence Edna Nora Autumn Gabrielle Mackenzie Kristina Kaylee Joy Melinda Deanna "
    "Katelyn Carmen Pauline Sue Charlene Tamara Rosa Alexa Lindsay Gladys Marlene Gabriella Marcia Lucille Stella "
    "Arlene Riley Aubrey Constance Erika Thelma Claudia Marissa Tonya Violet Georgia Brooklyn Kylie Harper Patsy "
    "Tanya Alison Gwendolyn Priscilla Miranda Daisy Ariana Layla Delores Marion Caitlin Mariah Maya Ethel "
    "Angelina Jocelyn Isabel Vickie Carole Nina Yolanda Bernice Glenda Melody Brandy Ana Makayla Joanna Bailey "
    "Beatrice Zoey Marsha Wilma Sadie Madelyn Alexandria Camila Brandi Aaliyah Kara Katrina Marian Bethany "
    "Arianna Toni Penny Sierra Christy Sophie Jessie Kendra Whitney Natasha Meghan Briana Dianne Kay Jade Alma "
    "Billie Scarlett Miriam Adriana Gianna Cora Cecilia Nevaeh Elena Angelica Penelope Hope Karla Jackie Jenny "
    "Bridget Felicia Elsie Margie Vera Isabelle Tracey Bertha Becky Summer Bobbie Ellie Kennedy Lillie Misty "
    "Candace Jacquelyn Shelly Kristine Iris Maxine Sherri Gabriela Desiree Trinity Peyton Jillian Genesis "
    "Brittney Breanna Ida Skylar Maggie Rachael Jodi Sheryl Monique Genevieve Lynda Aria Natalia Lena Kristi "
    "Aurora Bianca Ariel Meredith Krystal Kelli Rebekah Krista Bella Shelley Belinda Kate Gracie Valeria Kristy "
    "Serenity Cheyenne Camille Sandy Mila Candice Elise Jada Adrienne Rosalie Agnes Liliana Ramona Mattie Carly "
    "Luna Sonia Sonya Daniela Lola Nichole Kendall Ivy Jennie Antoinette Juliana Marianne Mckenzie Guadalupe "
    "Robyn Yvette Alana Rylee Nellie Dora Patty Lynne Reagan Bessie Leona Pearl Janie Angie Maryann Sheri Karina "
    "Abby Gayle Mya Rosie Geneva Kari Jordyn Cassidy Lila Roxanne Celeste Tabitha Annabelle Payton Kaitlin Viola "
    "Faye Piper Mallory Gertrude Lilly Alisha Minnie Eliana Dianna Josie Jody Janelle Mikayla Selena Callie "
    "Harriet Lana Mae Paisley Jan Jeannette Myra Ada Aimee Vicky Kiara Emilia Kirsten Allyson Delilah Tessa Lacey "
    "Michaela Caitlyn Alejandra Adeline Cara Traci Irma Cristina Velma Susie Eliza Valentina Hayley Kellie Willow "
    "Dominique Gretchen Bernadette Raquel Marcella Rosemarie Anastasia Jaclyn Julianna Kylee Esmeralda Eloise "
    "Marisa Lucia Eunice Janis Shelia Giselle Nadine Ashlyn Aubree Adrianna Marguerite Betsy Paulette Rochelle "
    "Johanna Alaina Hilda Kelley Khloe Hattie Ginger Doreen Leilani Jana Latoya Christie Shawna Myrtle Alexia "
    "Aliyah Laurel Nadia Jasmin Patti Athena Quinn Elisa Jayla Cecelia Teri Lora Carolina Serena Brielle Leila "
    "Makenzie Ashlee Jazmin Eden Darla Lynette Elisabeth Leticia Corinne Raven Mindy Mercedes Kyla Cassie London "
    "Mckenna Mariana Verna Meagan Delaney Alberta Mona Kinsley Mabel Isla Shari Alondra Laila Madeleine Celia "
    "Allie Trisha Tricia Leigh Noelle Dixie Nikki Reese Mandy Lyla Hadley Pat Nova Sonja Yesenia Hanna Alina "
    "Stacie Della Ebony Kira Marla Daphne Clarissa Kristie Alissa Amaya Olga Kimberley Tami Jazmine Flora Marina "
    "Margarita Kyra Sasha Lula Kerri Stefanie Lorena Tori Bonita Fatima Cheri Brooklynn Justine Jeannie Francine "
    "Tasha Tammie Fannie Sherrie Britney Jolene Tatiana Everly Ximena Ciara Opal Ronda Emery Alisa Phoebe Lesley "
    "Patrice Inez Ernestine Katharine Marisol Rachelle Laverne Tia Therese Janine Erma Kayleigh Diamond Juliet "
    "Charity Pam Sienna Kasey Kassandra Lucinda Mayra Muriel Christa Alayna Harmony Tracie Alivia Deloris Trina "
    "Keira Juliette Francesca Asia Savanna Keri Ryleigh Makenna Daniella Paris Ashleigh Fiona Lea Chelsey Mamie "
    "Aileen Macy Dina Talia Shayla Helena Katelynn Janette Dena Gwen Latasha Jewel Julianne Myrna Olive Marley "
    "Cherie Debora Haylee Shana Mollie Randi Angelique Kali Leanne Izabella Antonia Cathleen Alyson Norah Brenna "
    "Ayla Aniyah Camryn Arielle Hillary Lara Delia Bette Bettie Malia Elaina Tania Heaven Joni Adalynn Blanche "
    "Karin Candy Tiana Evangeline Carissa Shanna Hallie Beulah Emerson Shauna Rena Adele Presley Raelynn Brynn "
    "Cierra Jayne Sondra Clare Jodie Adalyn Mable Kailey Melba Teagan Ingrid Lexi Lou Estelle Lenora Simone Freda "
    "Luz Imani Millie Henrietta Catalina Estella Eve Reba Kiana Lorna Jenifer Taryn Staci Greta Camilla Lizbeth "
    "Susanne Elsa Margo Lorene Julissa Trudy Blanca Kenya Colette Willa Ashlynn Polly Sage Viviana Sallie Maribel "
    "Aisha Leanna Londyn Chasity Leann Tatum Alanna Rosalind Nia Hilary Angeline Jeannine Bobbi Lia Paola Eula "
    "Arya Jeanine Nyla Bridgette Audra Tiara Emilee Helene Winifred Deana Arabella Ericka Raegan Kamryn Larissa "
    "Maritza Lela Tamika Adelaide India Alessandra Darcy Jeri Emilie Mara Skye Sheena Angelia Danna Addie Tonia "
    "Keisha Maddison Glenna Lorie Emely Amara Latonya Cadence Bettye Nayeli Noemi Marcy Madalyn Lauryn Kaylie "
    "Cali Elliana Rosetta Jami Rylie Eugenia Madilyn Etta Rosalyn Kiera Ladonna Aspen Baylee Fay Christi Yasmin "
    "Gemma Sarai Jayda Adelyn Lilliana Kassidy Imogene Brianne Amie Susana Dorothea Maeve Perla Maci Elyse Finley "
    "Silvia Macie Kenzie Karissa Mikaela Katy Ina Terrie May Samara Gale Maura Kyleigh Noreen Miracle Essie Lacy "
    "Tabatha Nettie Lyric Bryanna Esperanza Tanisha Kelsie Gia Ruthie Araceli Amira Dulce Matilda Lilah Ollie "
    "Kiley Nathalie Precious Rae Ainsley Melisa Nola Fern Kaylin Itzel Annika Annmarie Blair Ora Sloane Claudette "
    "Alexus Kinley Chanel Octavia Liana Valarie Paulina Malinda Latisha Iva Brynlee Melina Katlyn Haven Margot "
    "Elvira Anya Journey Fernanda Vivienne Clarice Hollie Nelda Rhoda Lottie Elva Selina Mavis Saundra Corrine "
    "Carmela Cleo Joselyn Jewell Kimberlee Janae Elissa Beatriz Abbie Abbey Ariella Aniya Anahi Susanna Myla "
    "Lorrie Chandra Lilian Elle "
)

_FEW_NAMES = farel_bench.MALE_NAMES + farel_bench.FEMALE_NAMES
"""lineage-bench's first 100 names of each list are farel-bench's."""
_ALL_NAMES = farel_bench.MALE_NAMES + _MORE_MALE_NAMES + farel_bench.FEMALE_NAMES + _MORE_FEMALE_NAMES


def group_name(size: int, relation: str) -> str:
    """A case's group: its problem size and class, so the macro mean over groups is lineage-bench's score."""
    return f"lineage-{size} {relation}"


_GROUP = re.compile(r"^lineage-(\d+) ")


def size_of_group(group: str) -> int | None:
    match = _GROUP.match(group)
    return int(match.group(1)) if match else None


def size_scores(groups: Iterable[GroupScore]) -> dict[str, float | None]:
    """`lineage-N` -> the mean of that size's class accuracies (0-100), as `compute_metrics.py` prints each size."""
    by_size: dict[int, list[float]] = {}  # a size none of whose groups was scored has no figure
    for group in groups:
        size = size_of_group(group.group)
        if size is not None and group.score is not None:
            by_size.setdefault(size, []).append(group.score)
    return {f"lineage-{size}": sum(values) / len(values) for size, values in by_size.items()}


def _check_length(length: int) -> None:
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise InputError(f"a lineage quiz connects {MIN_LENGTH} to {MAX_LENGTH} people, not {length}")


def _check_template(template: str) -> None:
    """A template str.format cannot fill is refused before any quiz is written."""
    try:
        template.format(quiz_relations="x", quiz_question="x", quiz_answers="x")
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise InputError(f"bad prompt template: {type(exc).__name__}: {exc}") from None


def _edges(rng: random.Random, length: int, relation: str) -> list[tuple[int, int]]:
    """`(a, b)`: a is b's ancestor. The chain runs from person 0 to person length-1; a common ancestor or
    descendant sits at a drawn position inside it."""
    if relation == "ANCESTOR":
        return [(i, i + 1) for i in range(length - 1)]
    if relation == "DESCENDANT":
        return [(i + 1, i) for i in range(length - 1)]
    common = rng.randint(1, length - 2)
    up_to_common = relation == "COMMON_ANCESTOR"
    return [(i + 1, i) if (i + 1 <= common) == up_to_common else (i, i + 1) for i in range(length - 1)]


def _statement(ancestor: str, descendant: str, *, ancestor_first: bool) -> str:
    """One relation, stated from either side (lineage-bench draws which)."""
    if ancestor_first:
        return f"* {ancestor} is {descendant}'s ancestor."
    return f"* {descendant} is {ancestor}'s descendant."


def _quiz(
    rng: random.Random, pool: Sequence[str], length: int, relation: str, *, shuffle: bool, template: str
) -> tuple[str, tuple[str, ...], int]:
    """One quiz's text, options and correct option number, drawing from `rng` in lineage-bench's order."""
    names = rng.sample(pool, length)
    edges = _edges(rng, length, relation)
    if shuffle:
        rng.shuffle(edges)
    statements = [_statement(names[a], names[b], ancestor_first=rng.choice((True, False))) for a, b in edges]
    first, last = names[0], names[-1]
    order = list(RELATIONS)
    if shuffle:
        rng.shuffle(order)
    options = (*(_OPTIONS[r].format(a=first, b=last) for r in order), NONE_CORRECT)
    prompt = template.format(
        quiz_relations="\n".join(statements),
        quiz_question=f"Determine the lineage relationship between {first} and {last}.",
        quiz_answers="\n".join(f"{number}. {option}" for number, option in enumerate(options, 1)),
    )
    return prompt, options, order.index(relation) + 1


def quiz_case(size: int, relation: str, correct: int, prompt: str, options: Sequence[str]) -> Case:
    """A quiz as a multiple-choice case. Its id is the size and the MD5 of its text (as lineage-bench names its
    cached answers), so an imported result and a run here on the same quiz pair up."""
    quiz = Quiz(
        id=f"{size}-{hashlib.md5(prompt.encode('utf-8')).hexdigest()[:12]}",
        class_name=group_name(size, relation),
        prompt=prompt,
        options=tuple(options),
        correct=correct,
    )
    case = quiz.to_case()
    return case.model_copy(update={"metadata": {**case.metadata, "problem_size": size, "relation": relation}})


def numbered(cases: Iterable[Case]) -> Iterator[Case]:
    """Case ids made unique: a quiz that comes again is `ID-2`, `ID-3`..."""
    seen: dict[str, int] = {}
    for case in cases:
        seen[case.id] = seen.get(case.id, 0) + 1
        yield case if seen[case.id] == 1 else case.model_copy(update={"id": f"{case.id}-{seen[case.id]}"})


def generate(
    length: int, number: int = 10, seed: int | None = None, *, shuffle: bool = False, template: str = DEFAULT_PROMPT
) -> Iterator[Case]:
    """The quizzes `lineage_bench.py -l length -n number -r seed [-s]` writes, in its order, as cases."""
    _check_length(length)
    _check_template(template)
    return numbered(_generate(length, number, seed, shuffle=shuffle, template=template))


def _generate(length: int, number: int, seed: int | None, *, shuffle: bool, template: str) -> Iterator[Case]:
    rng = random.Random(seed)
    pool = _FEW_NAMES if length <= _FEW_NAMES_UP_TO else _ALL_NAMES
    for _ in range(number):
        for relation in RELATIONS:
            prompt, options, correct = _quiz(rng, pool, length, relation, shuffle=shuffle, template=template)
            yield quiz_case(length, relation, correct, prompt, options)


def csv_line(case: Case) -> str:
    """A case as the CSV row lineage-bench writes (size, class, correct number, quiz; `\\r\\n` line end)."""
    out = io.StringIO()
    csv.writer(out).writerow([case.metadata["problem_size"], case.metadata["relation"], case.expected, case.prompt])
    return out.getvalue()


def _csv_bytes(case: Case) -> bytes:
    return csv_line(case).encode("utf-8")


def generated_dataset(lengths: Sequence[int], number: int, seed: int | None, *, shuffle: bool) -> Dataset:
    """The quizzes of `lineage_bench.py -l L -n number -r seed [-s]` for each size L in turn, and the MD5 of
    those outputs one after another."""
    sizes = list(lengths)
    if not sizes:
        raise InputError("name at least one lineage problem size")
    for length in sizes:
        _check_length(length)
    if len(set(sizes)) < len(sizes):
        raise InputError(f"a lineage problem size is named twice: {','.join(map(str, sizes))}")
    if number < 1:
        raise InputError(f"must be at least 1, got {number}", parameter="number")

    def source() -> Iterator[Case]:
        return (case for length in sizes for case in generate(length, number, seed, shuffle=shuffle))

    groups, md5, source = survey(source, _csv_bytes)
    params = {"problem_sizes": sizes, "number": number, "seed": seed, "shuffle": shuffle}
    info = DatasetInfo(suite=SUITE, source="generated", md5=md5, cases=sum(groups.values()), params=params)
    return Dataset(info, groups, source)


_OPTION_LINE = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)


def options_of(prompt: str) -> tuple[str, ...]:
    """The numbered option lines 1..K of a quiz (the last run that starts at 1)."""
    runs: list[list[str]] = []
    for match in _OPTION_LINE.finditer(prompt):
        if match.group(1) == "1":
            runs.append([match.group(2)])
        elif runs and match.group(1) == str(len(runs[-1]) + 1):
            runs[-1].append(match.group(2))
    if not runs or len(runs[-1]) < 2:
        raise InputError("no numbered answer options (1., 2., ...) in the quiz")
    return tuple(runs[-1])


_MAX_DIGITS = 9


def _whole_number(field: str, what: str) -> int:
    """A small whole number as lineage-bench writes one; a field of thousands of digits is refused, not parsed."""
    text = field.strip()
    if not text.isascii() or not text.isdigit() or len(text) > _MAX_DIGITS:
        raise InputError(f"{what} is {field[:12]!r}, not a whole number")
    return int(text)


def case_from_row(size_field: str, relation: str, correct_field: str, prompt: str, where: str) -> Case:
    """A quiz read back from lineage-bench's CSV (its quiz file or its results); bad fields name `where`."""
    try:
        size = _whole_number(size_field, "the problem size")
        if relation not in RELATIONS:
            raise InputError(f"unknown relation {relation[:40]!r} (lineage-bench's are {', '.join(RELATIONS)})")
        correct = _whole_number(correct_field, "the correct answer")
        options = options_of(prompt)
        if not 1 <= correct <= len(options):
            raise InputError(f"the correct answer {correct} is not an option number 1..{len(options)}")
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return quiz_case(size, relation, correct, prompt, options)


def csv_rows(text: str, where: str) -> Iterator[tuple[int, list[str]]]:
    """Rows of a CSV text with their numbers (blank lines skipped, as pandas skips them); one line on bad CSV.

    A field may be as long as the text (a model's reply of more than the csv module's 131,072 characters: three of
    the result files lineage-bench publishes hold one); the reader still holds one row at a time."""
    reader = csv.reader(io.StringIO(text, newline=""))
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text)))  # the module's one setting, put back when the rows are read
    number = 0
    try:
        for row in reader:
            if row:
                number += 1
                yield number, row
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {where} line {reader.line_num}: {exc}") from None
    finally:
        csv.field_size_limit(limit)


def read_dataset(path: str) -> Dataset:
    """lineage-bench quizzes (`lineage_bench.py`'s CSV) from a file, or standard input when `path` is `-`."""
    raw, text, where = read_csv_source(path, "lineage CSV")
    cases: list[Case] = []
    for number, row in csv_rows(text, where):
        if len(row) != 4:
            raise InputError(f"malformed CSV: {where} row {number}: expected 4 fields (size, relation, answer, quiz), "
                             f"got {len(row)}")  # fmt: skip
        size, relation, correct, quiz = row
        cases.append(case_from_row(size, relation, correct, quiz, f"malformed CSV: {where} row {number}"))
    if not cases:
        raise InputError(f"malformed CSV: {where}: no quizzes found")
    cases = list(numbered(cases))
    groups, _, source = survey(lambda: iter(cases), None)
    sizes = list(dict.fromkeys(int(case.metadata["problem_size"]) for case in cases))
    info = DatasetInfo(suite=SUITE, source="stdin" if path == "-" else "file", path=None if path == "-" else path,
                       md5=hashlib.md5(raw).hexdigest(), cases=len(cases), params={"problem_sizes": sizes})  # fmt: skip
    return Dataset(info, groups, source)


_STRICT = re.compile(r"<ANSWER>([0-9])</ANSWER>")
"""`compute_metrics.py`'s reading: the first tag holding exactly one digit (`<ANSWER>12</ANSWER>` is no answer)."""

_RELAXED = tuple(
    re.compile(pattern, re.MULTILINE)
    for pattern in (
        r"boxed\{([0-9])\}",
        r"boxed\{\\text\{([0-9])\}\}",
        r"mathbf\{([0-9])\}",
        r"</ANSWER>([0-9])</ANSWER>",
        r"ANSWER:\s*([0-9])",
        r"\*\*ANSWER\*\*:?\s*([0-9])",
        r"\*\*ANSWER>\*\*([0-9])</ANSWER>",
        r"\*\*ANSWER>([0-9])</ANSWER>\*\*",
        r"\*\*ANSWER:\*\*\s*([0-9])",
        r"\*\*ANSWER\*\*\s*\n([0-9])",
        r"ANSWER>([0-9])</ANSWER>",
        r"<ANSWER>([0-9])\\</ANSWER>",
        r"<ANSWER\\>([0-9])\\</ANSWER\\>",
        r"<ANSWER>([0-9])</ANSWER",
        r"\*\*Correct Answer:\*\* ([0-9])",
        r"<ACTION>([0-9])</ACTION>",
    )
)
"""`compute_metrics.py --relaxed`'s patterns, in its order: tried only when the strict tag is absent."""


def _answered(digit: str) -> str | None:
    """lineage-bench counts an answer of 0 as missing (0 is its 'no answer')."""
    return None if digit == "0" else digit


def strict_answer(text: str) -> str | None:
    """The option number as lineage-bench reads it, or None (missing): no single-digit tag, or a tag holding 0."""
    match = _STRICT.search(text)
    return _answered(match.group(1)) if match else None


def relaxed_answer(text: str) -> str | None:
    """The option number `compute_metrics.py --relaxed` reads from a reply the strict reading finds missing."""
    if _STRICT.search(text):
        return None  # a strict tag holding 0: the relaxed reading stops there too
    for pattern in _RELAXED:
        match = pattern.search(text)
        if match:
            return _answered(match.group(1))
    return None


LINEAGE_TASK: Task[OptionAnswer | str] = replace(
    multiple_choice_task(SUITE),
    reader=TextReader(
        read=strict_answer,
        feedback=f"No <ANSWER> tag with the number of an answer option found. {farel_bench.TAG_INSTRUCTION}",
        invalid_kind="no_tag",
        relaxed=relaxed_answer,
        example="<ANSWER>1</ANSWER>",
    ),
)
"""FaRel's multiple-choice task (option number validated against the quiz's options in the structured modes) with
lineage-bench's reading in the text modes: the option number as a string, compared with the correct one."""


def _length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not MIN_LENGTH <= value <= MAX_LENGTH:
        raise argparse.ArgumentTypeError(f"must be {MIN_LENGTH} to {MAX_LENGTH}, got {value}")
    return value


def _argument_parser(prog: str) -> OneLineArgumentParser:
    parser = OneLineArgumentParser(prog=prog, description="Generate lineage-bench quizzes as CSV on stdout.")
    parser.add_argument(
        "-l", "--length", type=_length, required=True, metavar=f"[{MIN_LENGTH}-{MAX_LENGTH}]",
        help="Number of people connected with lineage relationships in the quiz.",
    )  # fmt: skip
    parser.add_argument(
        "-p", "--prompt", default=DEFAULT_PROMPT,
        help=f"Prompt template of the quiz. The default prompt template is: {DEFAULT_PROMPT!r}",
    )  # fmt: skip
    parser.add_argument(
        "-s", "--shuffle", action="store_true", help="Shuffle the order of lineage relations in the quiz."
    )
    parser.add_argument(
        "-n", "--number", type=int, default=10, help="Number of quizzes generated for each valid answer option."
    )
    parser.add_argument("-r", "--seed", type=int, default=None, help="Random seed value")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "lineage") -> int:
    """`lineage_bench.py`'s command line: the same flags, the same bytes on stdout."""
    args = _argument_parser(prog).parse_args(argv)
    if args.number < 0:
        print(f"{prog}: error: argument -n/--number: must be 0 or more, got {args.number}", file=sys.stderr)
        return 2
    try:
        template = farel_bench.decode_template(args.prompt)
        _check_template(template)
    except (farel_bench.FarelFormatError, InputError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="", write_through=False)
    for case in generate(args.length, args.number, args.seed, shuffle=args.shuffle, template=template):
        out.write(csv_line(case))
    out.flush()
    out.detach()
    return 0


class LineageParams(BaseModel):
    """lineage-bench's quizzes: lineage_bench.py's arguments for each problem size, or a quiz file."""

    model_config = ConfigDict(extra="forbid")

    quizzes: str | None = Field(None, description="a lineage CSV file, or - for standard input (default: generate)")
    length: list[int] = Field(list(DEFAULT_LENGTHS), description=f"people per quiz, {MIN_LENGTH} to {MAX_LENGTH}")
    number: int = Field(50, description="quizzes per answer option")
    seed: int | None = Field(42, description="generator seed")
    shuffle: bool = Field(True, description="shuffle the order of the relations")


def _build(params: LineageParams) -> tuple[Task[OptionAnswer | str], Dataset]:
    if params.quizzes is not None:
        return LINEAGE_TASK, read_dataset(params.quizzes)
    return LINEAGE_TASK, generated_dataset(params.length, params.number, params.seed, shuffle=params.shuffle)


def _sizes(scores: Scores) -> dict[str, float | None]:
    return size_scores(scores.groups)


def _size_line(summary: RunSummary) -> list[str]:
    sizes = size_scores(summary.scores.groups)
    return ["problem sizes: " + ", ".join(f"{name} {value:.2f}" for name, value in sizes.items() if value is not None)]


def _generator(argv: Sequence[str], prog: str) -> int:
    return main(argv, prog=prog)


LINEAGE = Suite(
    name=SUITE,
    params=LineageParams,
    build=_build,
    description="lineage-bench: ancestor and descendant quizzes on graphs of 4 to 2,048 people, multiple choice",
    columns=["lineage-*"],
    title="Lineage",
    modes=("tool", "native", "prompted", "text", "tag"),
    group_columns=False,
    relaxed_column=True,
    row_metrics=_sizes,
    headline=lambda _: "lineage",
    report_lines=_size_line,
    generate=_generator,
    show_answer=show_option,
    baseline=option_baseline,
)
