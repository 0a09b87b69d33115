"""Second held-out set: queries with the filters a careful human would extract. today = 2025-06-01.

Written before any extractor was run on them, by someone who had not read the extractor's code, against the rows of
``filter_schemas_b/data.py`` (stays, laptops, books). Same notation as ``filter_schemas/cases.py``:
  C(field, op, value)            one expected condition (a "slot")
  ANY([conds...], [conds...])    a slot that any one of these alternatives satisfies
  X(slot, bad=...)               the slot is an exclusion; `bad` = the value(s) whose *positive* filter would be harmful
  opt=[...]                      conditions that are acceptable but not required (neither a hit nor a spurious filter)
  expect=[] and kind="none"      not a catalogue query: nothing should be extracted

Conventions: "under/below/less than/cheaper than" -> lt; "max/at most/or less/no more than/up to" -> lte;
"over/more than/above" -> gt; "at least/or more/N+" -> gte; "between A and B" -> gte A and lte B. A negated boolean
or yes/no value ("without breakfast", "non-refundable", "no touchscreen") is marked as an exclusion of the other
value. Vague words with no number ("cheap", "lightweight", "near the center", "luxury") give no condition.

Frozen: do not change a query or an expectation to suit an extractor. At freezing,
sha256(repr(CASES)) = 500378d2461df8143ef665b19db59923e81c6665ddeaca2653ed5165685c405c.
"""

from __future__ import annotations

from filter_schemas.cases import ANY, NONE, C, Case, Q, X

STAYS = [
    Q(
        "hotels in Lisbon under 120 euros a night with breakfast",
        C("city", "eq", "Lisbon"),
        C("property_type", "eq", "Hotel"),
        C("price_per_night_eur", "lt", 120),
        C("breakfast_included", "eq", "yes"),
    ),
    Q("cheap hostels in prague", C("property_type", "eq", "Hostel"), C("city", "eq", "Prague")),
    Q(
        "Apartment in Barcelona for 4 people",
        C("property_type", "eq", "Apartment"),
        C("city", "eq", "Barcelona"),
        C("max_guests", "gte", 4),
    ),
    Q("pet friendly places in Amsterdam", C("amenities", "eq", "Pets allowed"), C("city", "eq", "Amsterdam")),
    Q("rome 4 stars or more", C("city", "eq", "Rome"), C("guest_rating", "gte", 4)),
    Q("within 1 km of the centre, Paris", C("distance_to_center_km", "lte", 1), C("city", "eq", "Paris")),
    Q(
        "free cancellation vienna under €150",
        C("free_cancellation", "eq", True),
        C("city", "eq", "Vienna"),
        C("price_per_night_eur", "lt", 150),
    ),
    Q(
        "B&Bs in Edinburgh rated 4.5+",
        C("property_type", "eq", "B&B"),
        C("city", "eq", "Edinburgh"),
        C("guest_rating", "gte", 4.5),
    ),
    Q(
        "somewhere with a pool in Seville or Athens",
        C("amenities", "eq", "Pool"),
        C("city", "in", ["Seville", "Athens"]),
    ),
    Q(
        "anywhere but Paris, max 90 eur/night",
        X(C("city", "ne", "Paris"), "Paris"),
        C("price_per_night_eur", "lte", 90),
    ),
    Q(
        "hotels in Milan without breakfast",
        C("property_type", "eq", "Hotel"),
        C("city", "eq", "Milan"),
        X(C("breakfast_included", "eq", "no"), "yes"),
    ),
    Q("listings hosted by Marta Oliveira", C("host_name", "eq", "Marta Oliveira")),
    Q(
        "Budapest apartments not hosted by Bence Nagy",
        C("city", "eq", "Budapest"),
        C("property_type", "eq", "Apartment"),
        X(C("host_name", "ne", "Bence Nagy"), "Bence Nagy"),
    ),
    Q("villas with a sea view", C("property_type", "eq", "Villa"), C("amenities", "eq", "Sea view")),
    Q(
        "places renovated in the last two years",
        ANY(C("last_renovated", "gte", "2023-06-01"), C("last_renovated", "gt", "2023-06-01")),
    ),
    Q(
        "Florence hotels renovated since 2022",
        C("city", "eq", "Florence"),
        C("property_type", "eq", "Hotel"),
        C("last_renovated", "gte", "2022"),
    ),
    Q(
        "non-refundable rooms in Madrid",
        X(C("free_cancellation", "eq", False), True),
        C("city", "eq", "Madrid"),
    ),
    Q(
        "Porto, €80–130 per night",
        C("city", "eq", "Porto"),
        C("price_per_night_eur", "gte", 80),
        C("price_per_night_eur", "lte", 130),
    ),
    Q(
        "sleeps 6+ with a kitchen in Dubrovnik",
        C("max_guests", "gte", 6),
        C("amenities", "eq", "Kitchen"),
        C("city", "eq", "Dubrovnik"),
    ),
    Q(
        "gym and spa hotel edinburgh",
        C("amenities", "eq", "Gym"),
        C("amenities", "eq", "Spa"),
        C("property_type", "eq", "Hotel"),
        C("city", "eq", "Edinburgh"),
    ),
    Q("parking + EV charging", C("amenities", "eq", "Parking"), C("amenities", "eq", "EV charging")),
    Q(
        "hotels or hostels in Krakow",
        C("property_type", "in", ["Hotel", "Hostel"]),
        C("city", "eq", "Kraków"),
    ),
    Q(
        "hostels in Edinburgh with a rating above 4",
        C("property_type", "eq", "Hostel"),
        C("city", "eq", "Edinburgh"),
        C("guest_rating", "gt", 4),
    ),
    Q(
        "wheelchair accessible hotel in Vienna",
        C("amenities", "eq", "Wheelchair accessible"),
        C("property_type", "eq", "Hotel"),
        C("city", "eq", "Vienna"),
    ),
    Q("lisbon under a hundred a night near the center", C("price_per_night_eur", "lt", 100), C("city", "eq", "Lisbon")),
    Q(
        "airport shuttle in Athens, less than 2km from the centre",
        C("amenities", "eq", "Airport shuttle"),
        C("city", "eq", "Athens"),
        C("distance_to_center_km", "lt", 2),
    ),
    Q(
        "family rooms in Nice for at least 3 guests, breakfast included",
        C("amenities", "eq", "Family rooms"),
        C("city", "eq", "Nice"),
        C("max_guests", "gte", 3),
        C("breakfast_included", "eq", "yes"),
    ),
    Q("luxury stays in Paris €300+ per night", C("city", "eq", "Paris"), C("price_per_night_eur", "gte", 300)),
    Q(
        "apartments, not in Barcelona or Madrid",
        C("property_type", "eq", "Apartment"),
        X(C("city", "nin", ["Barcelona", "Madrid"]), ["Barcelona", "Madrid"]),
    ),
    Q("places from Lukas Nielsen or Giulia Esposito", C("host_name", "in", ["Lukas Nielsen", "Giulia Esposito"])),
    Q("renovated before 2010", C("last_renovated", "lt", "2010")),
    Q(
        "prague hotels where pets aren't allowed",
        C("city", "eq", "Prague"),
        C("property_type", "eq", "Hotel"),
        X(C("amenities", "ne", "Pets allowed"), "Pets allowed"),
    ),
    Q(
        "Free cancellation + breakfast, rated 4.2 or better, Madrid",
        C("free_cancellation", "eq", True),
        C("breakfast_included", "eq", "yes"),
        C("guest_rating", "gte", 4.2),
        C("city", "eq", "Madrid"),
    ),
    Q(
        "renovated between march and may last year",
        C("last_renovated", "gte", "2024-03-01"),
        C("last_renovated", "lte", "2024-05-31"),
    ),
    Q("room for two under fifty euros", C("max_guests", "gte", 2), C("price_per_night_eur", "lt", 50)),
    Q(
        "Dubrovnik or Nice with sea views, free cancellation",
        C("city", "in", ["Dubrovnik", "Nice"]),
        C("amenities", "eq", "Sea view"),
        C("free_cancellation", "eq", True),
    ),
    Q(
        "not a hostel, in Porto, less than €60",
        X(C("property_type", "ne", "Hostel"), "Hostel"),
        C("city", "eq", "Porto"),
        C("price_per_night_eur", "lt", 60),
    ),
    Q(
        "no more than half a km from the centre in Rome",
        C("distance_to_center_km", "lte", 0.5),
        C("city", "eq", "Rome"),
    ),
    NONE("what time is check-in usually?"),
    NONE("can I bring my dog on the train from Lisbon to Porto?"),
    NONE("how do I cancel booking 48213?"),
    NONE("is a 10% tourist tax normal in Amsterdam?"),
    NONE("do I need a visa for a 3 night trip to Dubrovnik"),
    NONE("what's the difference between a B&B and a guesthouse?"),
    NONE("my host Marta Oliveira isn't answering my messages"),
    NONE("thank you, that's perfect"),
    NONE("how far is Rome airport from the centre in km?"),
]

LAPTOPS = [
    Q("lightweight laptop at most 1.5 kg", C("weight_kg", "lte", 1.5)),
    Q("dell laptops under $800", C("brand", "eq", "Dell"), C("price_usd", "lt", 800)),
    Q(
        "16gb ram 1tb ssd",
        ANY(C("ram_gb", "eq", 16), C("ram_gb", "gte", 16)),
        ANY(C("storage_gb", "eq", 1000), C("storage_gb", "gte", 1000)),
    ),
    Q("At least 32 GB of RAM", C("ram_gb", "gte", 32)),
    Q(
        "14 inch, under 1k, except Dell",
        ANY(
            [C("screen_inches", "eq", 14)],
            [C("screen_inches", "gte", 14), C("screen_inches", "lt", 15)],
            [C("screen_inches", "gte", 14), C("screen_inches", "lte", 14.2)],
        ),
        C("price_usd", "lt", 1000),
        X(C("brand", "ne", "Dell"), "Dell"),
    ),
    Q("macbooks with 512gb", C("brand", "eq", "Apple"), C("storage_gb", "eq", 512)),
    Q(
        "touchscreen laptops from HP or Lenovo",
        C("touchscreen", "eq", True),
        C("brand", "in", ["HP", "Lenovo"]),
    ),
    Q(
        "Razer or MSI without a touch screen",
        C("brand", "in", ["Razer", "MSI"]),
        X(C("touchscreen", "eq", False), True),
    ),
    Q("backlit keyboard, lighter than 1.2kg", C("backlit_keyboard", "eq", "yes"), C("weight_kg", "lt", 1.2)),
    Q(
        "laptops released in the last 2 years",
        ANY(C("release_date", "gte", "2023-06-01"), C("release_date", "gt", "2023-06-01")),
    ),
    Q("2022 models", C("release_date", "eq", "2022")),
    Q(
        "refurbished Lenovo under $600",
        C("condition", "eq", "Refurbished"),
        C("brand", "eq", "Lenovo"),
        C("price_usd", "lt", 600),
    ),
    Q("new or open box asus", C("condition", "in", ["New", "Open box"]), C("brand", "eq", "Asus")),
    Q("listings from seller Priyanka Mirza", C("seller", "eq", "Priyanka Mirza")),
    Q("Acer not sold by Kevin Tran", C("brand", "eq", "Acer"), X(C("seller", "ne", "Kevin Tran"), "Kevin Tran")),
    Q(
        "thunderbolt 4 and an SD card slot",
        C("ports", "eq", "Thunderbolt 4"),
        C("ports", "eq", "SD card reader"),
    ),
    Q('need an ethernet port, 15.6" screen', C("ports", "eq", "Ethernet"), C("screen_inches", "eq", 15.6)),
    Q("17 inch or bigger", C("screen_inches", "gte", 17)),
    Q("screens between 13 and 14 inches", C("screen_inches", "gte", 13), C("screen_inches", "lte", 14)),
    Q(
        "ultralight under 3 lbs",
        ANY(
            C("weight_kg", "lt", 1.36),
            C("weight_kg", "lt", 1.361),
            C("weight_kg", "lt", 1.3608),
            C("weight_kg", "lte", 1.36),
        ),
    ),
    Q(
        "$1,000-$1,500 laptops with 32gb",
        C("price_usd", "gte", 1000),
        C("price_usd", "lte", 1500),
        ANY(C("ram_gb", "eq", 32), C("ram_gb", "gte", 32)),
    ),
    Q("below 2 grand with 64GB RAM", C("price_usd", "lt", 2000), C("ram_gb", "eq", 64)),
    Q("used laptops from before 2021", C("condition", "eq", "Used"), C("release_date", "lt", "2021")),
    Q("Samsung or LG at most 1.3kg", C("brand", "in", ["Samsung", "LG"]), C("weight_kg", "lte", 1.3)),
    Q("no Apple, must have HDMI", X(C("brand", "ne", "Apple"), "Apple"), C("ports", "eq", "HDMI")),
    Q(
        "Surface with 16 gigs",
        C("brand", "eq", "Microsoft"),
        ANY(C("ram_gb", "eq", 16), C("ram_gb", "gte", 16)),
    ),
    Q("anything from Framework", C("brand", "eq", "Framework")),
    Q("cheapest hp laptop", C("brand", "eq", "HP")),
    Q("8gb ram or less under 400 dollars", C("ram_gb", "lte", 8), C("price_usd", "lt", 400)),
    Q("released after March 2024 with USB-C", C("release_date", "gt", "2024-03"), C("ports", "eq", "USB-C")),
    Q("two terabytes of storage", C("storage_gb", "eq", 2000)),
    Q("1TB, not refurbished", C("storage_gb", "eq", 1000), X(C("condition", "ne", "Refurbished"), "Refurbished")),
    Q(
        "15 inch laptop under 700",
        ANY(
            [C("screen_inches", "gte", 15), C("screen_inches", "lt", 16)],
            [C("screen_inches", "gte", 15), C("screen_inches", "lte", 15.6)],
        ),
        C("price_usd", "lt", 700),
    ),
    Q(
        "Dell or HP, no older than 2023, 512GB+",
        C("brand", "in", ["Dell", "HP"]),
        C("release_date", "gte", "2023"),
        C("storage_gb", "gte", 512),
    ),
    Q("laptops from Hector Delgado or Jasmine Okoye", C("seller", "in", ["Hector Delgado", "Jasmine Okoye"])),
    Q(
        "at least 1TB, except Apple and Razer",
        ANY(C("storage_gb", "gte", 1000), C("storage_gb", "gte", 1024)),
        X(C("brand", "nin", ["Apple", "Razer"]), ["Apple", "Razer"]),
    ),
    Q("open-box deals under $1.2k", C("condition", "eq", "Open box"), C("price_usd", "lt", 1200)),
    Q("laptops w/o backlit keyboard", X(C("backlit_keyboard", "eq", "no"), "yes")),
    NONE("how do I clean a laptop keyboard with 2 spills on it?"),
    NONE("my Dell won't turn on after the BIOS update"),
    NONE("what's your return policy for refurbished items?"),
    NONE("is 8GB of RAM enough for photo editing?"),
    NONE("how many watts does a USB-C charger need for a 16 inch laptop"),
    NONE("can I upgrade the SSD in a MacBook Air?"),
    NONE("where is my order #50213"),
    NONE("ok thanks"),
    NONE("what's the difference between Thunderbolt 4 and USB4?"),
]

BOOKS = [
    Q("books by Margaret Ashworth", C("author", "eq", "Margaret Ashworth")),
    Q(
        "crime novels from the 90s",
        C("genres", "eq", "Crime"),
        C("published_date", "gte", "1990"),
        C("published_date", "lte", "1999"),
    ),
    Q("fantasy under 300 pages", C("genres", "eq", "Fantasy"), C("pages", "lt", 300)),
    Q("signed romance novels", C("signed_copy", "eq", True), C("genres", "eq", "Romance")),
    Q("hardbacks under £10", C("hardcover", "eq", "yes"), C("price_gbp", "lt", 10)),
    Q("thrillers in paperback", C("genres", "eq", "Thriller"), C("hardcover", "eq", "no")),
    Q(
        "French books published in the last 5 years",
        C("language", "eq", "French"),
        ANY(C("published_date", "gte", "2020-06-01"), C("published_date", "gt", "2020-06-01")),
    ),
    Q(
        "OUP classics before 1960",
        C("publisher", "eq", "Oxford University Press"),
        C("genres", "eq", "Classics"),
        C("published_date", "lt", "1960"),
    ),
    Q("sci-fi rated 4+", C("genres", "eq", "Science Fiction"), C("avg_rating", "gte", 4)),
    Q("Orbit or Gollancz fantasy", C("publisher", "in", ["Orbit", "Gollancz"]), C("genres", "eq", "Fantasy")),
    Q(
        "literary fiction, not by Rosalind Blackwood",
        C("genres", "eq", "Literary Fiction"),
        X(C("author", "ne", "Rosalind Blackwood"), "Rosalind Blackwood"),
    ),
    Q(
        "history books over 500 pages, £20 max",
        C("genres", "eq", "History"),
        C("pages", "gt", 500),
        C("price_gbp", "lte", 20),
    ),
    Q("anything by Imogen Stone or Jasper Kettering", C("author", "in", ["Imogen Stone", "Jasper Kettering"])),
    Q("books in German or Dutch", C("language", "in", ["German", "Dutch"])),
    Q("non-English crime fiction", X(C("language", "ne", "English"), "English"), C("genres", "eq", "Crime")),
    Q("published in 2024", C("published_date", "eq", "2024")),
    Q("books that came out this year", C("published_date", "eq", "2025")),
    Q("short romance, under 200 pages", C("genres", "eq", "Romance"), C("pages", "lt", 200)),
    Q("Vintage paperbacks", C("publisher", "eq", "Vintage"), C("hardcover", "eq", "no")),
    Q("cheap reads under a fiver", C("price_gbp", "lt", 5)),
    Q("between £8 and £12", C("price_gbp", "gte", 8), C("price_gbp", "lte", 12)),
    Q(
        "biographies published between 2010 and 2015",
        C("genres", "eq", "Biography"),
        C("published_date", "gte", "2010"),
        C("published_date", "lte", "2015"),
    ),
    Q("rated below 3.5", C("avg_rating", "lt", 3.5)),
    Q("kids books from Puffin", C("genres", "eq", "Children's"), C("publisher", "eq", "Puffin")),
    Q(
        "poetry or essays, not in English",
        C("genres", "in", ["Poetry", "Essays"]),
        X(C("language", "ne", "English"), "English"),
    ),
    Q("faber and faber hardbacks", C("publisher", "eq", "Faber & Faber"), C("hardcover", "eq", "yes")),
    Q(
        "thrillers not from HarperCollins",
        C("genres", "eq", "Thriller"),
        X(C("publisher", "ne", "HarperCollins"), "HarperCollins"),
    ),
    Q("1000+ page books", C("pages", "gte", 1000)),
    Q("Japanese literary fiction", C("language", "eq", "Japanese"), C("genres", "eq", "Literary Fiction")),
    Q("unsigned hardcovers", X(C("signed_copy", "eq", False), True), C("hardcover", "eq", "yes")),
    Q("signed copies published before 1970", C("signed_copy", "eq", True), C("published_date", "lt", "1970")),
    Q(
        "horror from the eighties under 400 pages",
        C("genres", "eq", "Horror"),
        C("published_date", "gte", "1980"),
        C("published_date", "lte", "1989"),
        C("pages", "lt", 400),
    ),
    Q("itziar echeverria", C("author", "eq", "Itziar Echeverría")),
    Q(
        "travel writing published in the last decade",
        C("genres", "eq", "Travel"),
        ANY(
            [C("published_date", "gte", "2015-06-01")],
            [C("published_date", "gt", "2015-06-01")],
            [C("published_date", "gte", "2010"), C("published_date", "lte", "2019")],
        ),
    ),
    Q("Popular science, 4.5 stars and up", C("genres", "eq", "Popular Science"), C("avg_rating", "gte", 4.5)),
    Q(
        "Bloomsbury but no children's books",
        C("publisher", "eq", "Bloomsbury"),
        X(C("genres", "ne", "Children's"), "Children's"),
    ),
    NONE("who wrote the book about the 1990 flood?"),
    NONE("do you buy second-hand books?"),
    NONE("what's the difference between a first edition and a first printing?"),
    NONE("how do I get a price sticker off a 1970s paperback"),
    NONE("can you gift-wrap 2 books for me?"),
    NONE("what does 'foxing' mean in a book description"),
    NONE("is shipping to France free over £25?"),
    NONE("thanks, bye"),
]

CASES: dict[str, list[Case]] = {"stays": STAYS, "laptops": LAPTOPS, "books": BOOKS}
