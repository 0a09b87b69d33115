"""Other names of countries: what people write for a country value ("Indian movies" for India, "the US"
for United States).

Common English knowledge, not any collection's. The values of a field get these names only when the field
holds at least ``PLACE_FIELD_MIN`` values of the table (a field of countries or of nationalities, not a list of
ingredients that holds "Turkey"); abbreviations match only as written in capitals ("show us" is no country).
Countries whose name is often something else (Turkey, Chile) are not in the table. The extractor reads a
demonym as a country only before what the catalogue lists (``FilterExtractor``: "Indian movies", not "the
Indian ocean" or "American actors"), and another name ("Korea", "Britain") like the country's own, but not
inside a longer place name ("North Korea", "New Britain")."""

from __future__ import annotations

from functools import cache

from waypost.filters.text import fold

PLACE_FIELD_MIN = 3
# country; its adjectives and demonyms; abbreviations (matched in capitals only when of two letters); other names
_COUNTRIES = """
United States|American,Americans|US,USA,U.S.,U.S.A.
United Kingdom|British,Briton,Britons|UK,U.K.|Britain,Great Britain
India|Indian,Indians|
China|Chinese|PRC
Japan|Japanese|
South Korea|Korean,Koreans,South Korean||Korea
France|French|
Germany|German,Germans|
Italy|Italian,Italians|
Spain|Spanish,Spaniards|
Portugal|Portuguese|
Mexico|Mexican,Mexicans|
Canada|Canadian,Canadians|
Brazil|Brazilian,Brazilians|
Argentina|Argentine,Argentinian,Argentinians|
Colombia|Colombian,Colombians|
Peru|Peruvian,Peruvians|
Australia|Australian,Australians|
New Zealand|New Zealander,New Zealanders|NZ
Ireland|Irish|
Netherlands|Dutch||Holland
Belgium|Belgian,Belgians|
Switzerland|Swiss|
Austria|Austrian,Austrians|
Sweden|Swedish,Swedes|
Norway|Norwegian,Norwegians|
Denmark|Danish,Danes|
Finland|Finnish,Finns|
Iceland|Icelandic|
Poland|Polish,Poles|
Czech Republic|Czech||Czechia
Hungary|Hungarian,Hungarians|
Romania|Romanian,Romanians|
Greece|Greek,Greeks|
Russia|Russian,Russians|
Ukraine|Ukrainian,Ukrainians|
Israel|Israeli,Israelis|
Egypt|Egyptian,Egyptians|
Nigeria|Nigerian,Nigerians|
South Africa|South African,South Africans|
Kenya|Kenyan,Kenyans|
Morocco|Moroccan,Moroccans|
Lebanon|Lebanese|
Saudi Arabia|Saudi,Saudis|
United Arab Emirates|Emirati,Emiratis|UAE
Iran|Iranian,Iranians,Persian|
Pakistan|Pakistani,Pakistanis|
Bangladesh|Bangladeshi|
Indonesia|Indonesian,Indonesians|
Philippines|Filipino,Filipinos,Philippine|
Thailand|Thai|
Vietnam|Vietnamese|
Malaysia|Malaysian,Malaysians|
Singapore|Singaporean,Singaporeans|
Taiwan|Taiwanese|
Hong Kong|Hongkonger|HK
"""


def _rows() -> list[tuple[str, list[str], list[str], list[str]]]:
    out = []
    for line in _COUNTRIES.strip().splitlines():
        name, others, codes, *names = line.split("|")
        out.append(
            (
                name,
                [o for o in others.split(",") if o],
                [c for c in codes.split(",") if c],
                [n for n in "".join(names).split(",") if n],
            )
        )
    return out


@cache
def _by_name() -> dict[str, tuple[list[str], list[str], list[str]]]:
    """A country's name or abbreviation (folded) -> (its adjectives and demonyms, its abbreviations, its other
    names)."""
    out: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for name, others, codes, names in _rows():
        for written in (name, *codes):
            out[fold(written.rstrip("."))] = (others, codes, names)
    return out


def other_names(value: str) -> tuple[list[str], list[str]]:
    """For a value that names a country ("India", "United States", "USA"): the words for its people
    (["Indian", "Indians"]) and its abbreviations (["US", "USA", ...]). Empty lists for any other value, a
    nationality included: "restaurants in Italy" is no Italian cuisine."""
    others, codes, _names = _by_name().get(fold(" ".join(value.split()).rstrip(".")), ([], [], []))
    return others, codes


def country_names(value: str) -> list[str]:
    """Other names of the country ``value`` names, said where its own name would be ("movies from Korea" for
    South Korea, "made in Britain"); empty for any other value."""
    return _by_name().get(fold(" ".join(value.split()).rstrip(".")), ([], [], []))[2]
