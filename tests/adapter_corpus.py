"""A small corpus for the adapter and client tests: 14 short documents on distinct topics, with metadata."""

from __future__ import annotations

from waypost.types import Document

QUERY = "How do honey bees tell each other where flowers are?"

_DOCS: list[tuple[str, str, str, int, str]] = [
    ("bees", "Honey bees", "nature", 2019,
     "Honey bees perform a waggle dance inside the hive. The angle and length of the dance tell other foragers "
     "the direction and distance of flowers rich in nectar."),
    ("ants", "Ant trails", "nature", 2018,
     "Ants lay pheromone trails between the nest and food. Other ants follow the scent, and the trail grows "
     "stronger as more workers use it."),
    ("birds", "Bird migration", "nature", 2021,
     "Many songbirds migrate at night and navigate by the stars, the Earth's magnetic field and landmarks "
     "such as coastlines and rivers."),
    ("whales", "Whale song", "nature", 2020,
     "Humpback whales sing long, repeating songs that travel for kilometres under water; males in one "
     "population share the same song."),
    ("pollination", "Pollination", "nature", 2022,
     "Flowers attract pollinators with colour, scent and nectar. Bees, butterflies and bats carry pollen from "
     "one flower to another."),
    ("mars", "Mars rovers", "space", 2021,
     "Rovers on Mars drill into rocks, photograph the terrain and search for signs that water once flowed "
     "across the planet's surface."),
    ("moon", "The Moon landing", "space", 1969,
     "In July 1969 Apollo 11 landed on the Moon. Neil Armstrong and Buzz Aldrin walked on the surface while "
     "Michael Collins orbited above."),
    ("telescope", "Space telescopes", "space", 2022,
     "Space telescopes observe infrared light from the first galaxies, above the blur of the atmosphere."),
    ("bread", "Sourdough bread", "food", 2020,
     "Sourdough rises with wild yeast and lactic acid bacteria kept alive in a starter that is fed flour and "
     "water every day."),
    ("coffee", "Coffee roasting", "food", 2017,
     "Roasting turns green coffee beans brown; the Maillard reaction and caramelisation create the aroma."),
    ("tea", "Green tea", "food", 2016,
     "Green tea leaves are steamed or pan-fired soon after picking, which stops oxidation and keeps them green."),
    ("python", "Python generators", "code", 2023,
     "A Python generator function uses yield to produce values lazily, one at a time, keeping its state "
     "between calls."),
    ("sql", "SQL joins", "code", 2015,
     "An inner join returns the rows that match in both tables; a left join keeps every row of the left table."),
    ("git", "Git branches", "code", 2014,
     "A git branch is a movable pointer to a commit; merging joins the histories of two branches."),
]  # fmt: skip

CORPUS: list[Document] = [
    Document(id=doc_id, text=text, title=title, metadata={"topic": topic, "year": year})
    for doc_id, title, topic, year, text in _DOCS
]
TEXTS = {d.id: d.text for d in CORPUS}
