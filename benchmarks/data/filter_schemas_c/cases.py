"""Third held-out set: queries with the filters a careful human would extract. today = 2025-06-01.

Written before any extractor was run on them, by someone who had not read the extractor's code, against the rows of
``filter_schemas_c/data.py`` (cars, jobs, trails). Same notation as ``filter_schemas/cases.py``:
  C(field, op, value)            one expected condition (a "slot")
  ANY([conds...], [conds...])    a slot that any one of these alternatives satisfies
  X(slot, bad=...)               the slot is an exclusion; `bad` = the value(s) whose *positive* filter would be harmful
  opt=[...]                      conditions that are acceptable but not required (neither a hit nor a spurious filter)
  expect=[] and kind="none"      not a catalogue query: nothing should be extracted

Conventions (as in set b): "under/below/less than/cheaper than/shorter than/<" -> lt; "max/at most/or less/no more
than/up to" -> lte; "over/more than/above/longer than/bigger than" -> gt; "at least/or more/min/N+" -> gte;
"between A and B", "from A to B" and "A-B" -> gte A and lte B; "newer than 2021" -> gt 2021, "not older than 2020"
-> gte 2020. "Older than N years" and "in the last N days/weeks" are counted back from today, with either side of
the boundary day accepted. A bare car amount with no unit or currency ("<20k", "below 30k", "max 6k") may be read
as price or as mileage (ANY); "grand" and a currency sign make it a price. A negated boolean or yes/no value ("no
equity", "dogs are not allowed", "not a loop") is marked as an exclusion of the other value; a positive phrasing of
the same ("without accidents", "point to point") is a plain condition. A currency sign on a salary makes a currency
condition optional, not required. Vague words with no number ("cheap", "low mileage", "family car", "well paid",
"small team", "long", "kid friendly") give no condition.

Frozen: do not change a query or an expectation to suit an extractor. At freezing,
sha256(repr(CASES)) = 62bc67a98714368c6b338698a2a0715dff555dfec26a7b4b55072c14c6d537d0.
"""

from __future__ import annotations

from filter_schemas.cases import ANY, NONE, C, Case, Q, X

CARS = [
    Q(
        "used diesel cars under 15k km from 2019 or newer",
        C("fuel", "eq", "Diesel"),
        C("mileage_km", "lt", 15000),
        C("first_registration", "gte", "2019"),
    ),
    Q(
        "diesel auto 2018+ <20k",
        C("fuel", "eq", "Diesel"),
        C("transmission", "eq", "Automatic"),
        C("first_registration", "gte", "2018"),
        ANY(C("price_eur", "lt", 20000), C("mileage_km", "lt", 20000)),
    ),
    Q("BMW 3 Series estate", C("make", "eq", "BMW"), C("model", "eq", "3 Series"), C("body_type", "eq", "Estate")),
    Q(
        "Golf or Polo under €8,000",
        C("model", "in", ["Golf", "Polo"]),
        C("price_eur", "lt", 8000),
        opt=[C("make", "eq", "Volkswagen")],
    ),
    Q(
        "automatic SUVs with a tow bar",
        C("transmission", "eq", "Automatic"),
        C("body_type", "eq", "SUV"),
        C("features", "eq", "Tow bar"),
    ),
    Q("electric cars with less than 50,000 km", C("fuel", "eq", "Electric"), C("mileage_km", "lt", 50000)),
    Q(
        "Is there any Tesla Model 3 below 30k?",
        C("make", "eq", "Tesla"),
        C("model", "eq", "Model 3"),
        ANY(C("price_eur", "lt", 30000), C("mileage_km", "lt", 30000)),
    ),
    Q(
        "no SUVs, petrol, max 120000 km",
        X(C("body_type", "ne", "SUV"), "SUV"),
        C("fuel", "eq", "Petrol"),
        C("mileage_km", "lte", 120000),
    ),
    Q(
        "cars registered before 2015 with only one previous owner",
        C("first_registration", "lt", "2015"),
        C("previous_owners", "eq", 1),
    ),
    Q(
        "not a manual please, VW or Skoda, up to 12 grand",
        X(C("transmission", "ne", "Manual"), "Manual"),
        C("make", "in", ["Volkswagen", "Skoda"]),
        C("price_eur", "lte", 12000),
    ),
    Q(
        "accident-free Audi A4 with leather seats",
        C("accident_free", "eq", True),
        C("make", "eq", "Audi"),
        C("model", "eq", "A4"),
        C("features", "eq", "Leather seats"),
    ),
    Q(
        "7 seater under 25k",
        C("seats", "eq", 7),
        ANY(C("price_eur", "lt", 25000), C("mileage_km", "lt", 25000)),
    ),
    Q(
        "cars listed in the last 3 days",
        ANY(C("listed_on", "gte", "2025-05-29"), C("listed_on", "gt", "2025-05-29")),
    ),
    Q(
        "at least 200 hp, automatic, from a dealer",
        C("power_hp", "gte", 200),
        C("transmission", "eq", "Automatic"),
        C("seller_type", "eq", "Dealer"),
    ),
    Q("private sellers only, Hamburg", C("seller_type", "eq", "Private"), C("city", "eq", "Hamburg")),
    Q("cars from Autohaus Becker", C("seller", "eq", "Autohaus Becker")),
    Q(
        "Anything Thomas Müller is selling?",
        C("seller", "eq", "Thomas Müller"),
        opt=[C("seller_type", "eq", "Private")],
    ),
    Q(
        "hybrid toyotas in munich or stuttgart",
        ANY(C("fuel", "eq", "Hybrid"), C("fuel", "in", ["Hybrid", "Plug-in hybrid"])),
        C("make", "eq", "Toyota"),
        C("city", "in", ["Munich", "Stuttgart"]),
    ),
    Q(
        "PHEV station wagon with warranty",
        C("fuel", "eq", "Plug-in hybrid"),
        C("body_type", "eq", "Estate"),
        C("warranty", "eq", "yes"),
    ),
    Q(
        "dealer cars with a warranty anywhere except Berlin",
        C("seller_type", "eq", "Dealer"),
        C("warranty", "eq", "yes"),
        X(C("city", "ne", "Berlin"), "Berlin"),
    ),
    Q(
        "Mercedes without accidents, max 2 owners",
        C("make", "eq", "Mercedes-Benz"),
        C("accident_free", "eq", True),
        C("previous_owners", "lte", 2),
    ),
    Q(
        "accident damaged cars for parts, under 3000 euros",
        C("accident_free", "eq", False),
        C("price_eur", "lt", 3000),
    ),
    Q(
        "Between 10 and 20 thousand euros, 5 doors",
        C("price_eur", "gte", 10000),
        C("price_eur", "lte", 20000),
        C("doors", "eq", 5),
    ),
    Q(
        "newer than 2021 with adaptive cruise control and a rear camera",
        C("first_registration", "gt", "2021"),
        C("features", "eq", "Adaptive cruise control"),
        C("features", "eq", "Rear camera"),
    ),
    Q(
        "older than 10 years but less than 100k km",
        ANY(C("first_registration", "lt", "2015-06-01"), C("first_registration", "lte", "2015-06-01")),
        C("mileage_km", "lt", 100000),
    ),
    Q(
        "white Kia or Hyundai SUV, not older than 2020",
        C("color", "eq", "White"),
        C("make", "in", ["Kia", "Hyundai"]),
        C("body_type", "eq", "SUV"),
        C("first_registration", "gte", "2020"),
    ),
    Q("MX-5 manual", C("model", "eq", "MX-5"), C("transmission", "eq", "Manual"), opt=[C("make", "eq", "Mazda")]),
    Q(
        "cheap family car with heated seats and apple carplay",
        C("features", "eq", "Heated seats"),
        C("features", "eq", "Apple CarPlay"),
    ),
    Q("coupes with more than 300 hp", C("body_type", "eq", "Coupe"), C("power_hp", "gt", 300)),
    Q(
        "listed since May in Leipzig or Dresden",
        C("listed_on", "gte", "2025-05-01"),
        C("city", "in", ["Leipzig", "Dresden"]),
    ),
    Q(
        "Dacia Duster with less than 80000km, not LPG",
        C("make", "eq", "Dacia"),
        C("model", "eq", "Duster"),
        C("mileage_km", "lt", 80000),
        X(C("fuel", "ne", "LPG"), "LPG"),
    ),
    Q(
        "3-door hatch, max 6k",
        C("doors", "eq", 3),
        C("body_type", "eq", "Hatchback"),
        ANY(C("price_eur", "lte", 6000), C("mileage_km", "lte", 6000)),
    ),
    Q(
        "cars without a sunroof from 2016 to 2019",
        X(C("features", "ne", "Sunroof"), "Sunroof"),
        C("first_registration", "gte", "2016"),
        C("first_registration", "lte", "2019"),
    ),
    Q(
        "what electric SUVs are there with a heat pump?",
        C("fuel", "eq", "Electric"),
        C("body_type", "eq", "SUV"),
        C("features", "eq", "Heat pump"),
    ),
    Q("sedans first registered in 2022", C("body_type", "eq", "Sedan"), C("first_registration", "eq", "2022")),
    Q(
        "under 60,000 km and no more than 4 years old",
        C("mileage_km", "lt", 60000),
        ANY(C("first_registration", "gte", "2021-06-01"), C("first_registration", "gt", "2021-06-01")),
    ),
    Q(
        "mileage between 30k and 60k km, grey or silver",
        C("mileage_km", "gte", 30000),
        C("mileage_km", "lte", 60000),
        C("color", "in", ["Grey", "Silver"]),
    ),
    Q("BMWs not from Isar Cars", C("make", "eq", "BMW"), X(C("seller", "ne", "Isar Cars"), "Isar Cars")),
    Q(
        "petrol, min 150 hp, €15k max, under 150k km",
        C("fuel", "eq", "Petrol"),
        C("power_hp", "gte", 150),
        C("price_eur", "lte", 15000),
        C("mileage_km", "lt", 150000),
    ),
    Q("new listings from today", C("listed_on", "eq", "2025-06-01")),
    NONE("how do I check a used car's service history?"),
    NONE("is 150,000 km too much for a diesel?"),
    NONE("what does accident-free actually mean in a listing?"),
    NONE("can I get financing for a car over €20k?"),
    NONE("what's the difference between a hybrid and a plug-in hybrid?"),
    NONE("how do I edit my listing CAR-51006?"),
    NONE("should I replace the timing belt at 120k km?"),
    NONE("how do I transfer ownership after a private sale in Germany?"),
    NONE("do I need winter tyres in Munich?"),
    NONE("thanks, that's helpful"),
]

JOBS = [
    Q(
        "any remote python jobs paying over 80k?",
        C("remote", "eq", "remote"),
        C("skills", "eq", "Python"),
        C("salary", "gt", 80000),
    ),
    Q(
        "senior backend engineer roles in Berlin",
        C("seniority", "eq", "Senior"),
        C("title", "eq", "Backend Engineer"),
        C("city", "eq", "Berlin"),
    ),
    Q(
        "$90K-$120K data scientist jobs",
        C("salary", "gte", 90000),
        C("salary", "lte", 120000),
        C("title", "eq", "Data Scientist"),
        opt=[C("currency", "eq", "USD"), C("currency", "in", ["USD", "CAD"])],
    ),
    Q(
        "jobs posted in the last 2 weeks in Amsterdam",
        ANY(C("posted_on", "gte", "2025-05-18"), C("posted_on", "gt", "2025-05-18")),
        C("city", "eq", "Amsterdam"),
    ),
    Q(
        "frontend jobs in Berlin or Munich",
        C("title", "eq", "Frontend Developer"),
        C("city", "in", ["Berlin", "Munich"]),
    ),
    Q(
        "hybrid data engineer positions in Dublin",
        C("remote", "eq", "hybrid"),
        C("title", "eq", "Data Engineer"),
        C("city", "eq", "Dublin"),
    ),
    Q(
        "on-site jobs in Spain with visa sponsorship",
        C("remote", "eq", "on-site"),
        C("country", "eq", "Spain"),
        C("visa_sponsorship", "eq", True),
    ),
    Q("jobs in Germany that aren't on-site", C("country", "eq", "Germany"), X(C("remote", "ne", "on-site"), "on-site")),
    Q("junior or mid-level React jobs", C("seniority", "in", ["Junior", "Mid-level"]), C("skills", "eq", "React")),
    Q("internships in Paris", C("employment_type", "eq", "Internship"), C("city", "eq", "Paris")),
    Q("part time jobs in the UK", C("employment_type", "eq", "Part-time"), C("country", "eq", "United Kingdom")),
    Q("NYC jobs, on-site or hybrid", C("city", "eq", "New York"), C("remote", "in", ["on-site", "hybrid"])),
    Q("open positions at Brightloom", C("company", "eq", "Brightloom")),
    Q(
        "ML engineer jobs, but not at Harbor Analytics",
        C("title", "eq", "Machine Learning Engineer"),
        X(C("company", "ne", "Harbor Analytics"), "Harbor Analytics"),
    ),
    Q("fintech companies hiring Kotlin devs", C("industry", "eq", "Fintech"), C("skills", "eq", "Kotlin")),
    Q("healthtech, remote or hybrid", C("industry", "eq", "Healthtech"), C("remote", "in", ["remote", "hybrid"])),
    Q(
        "jobs with equity and a team of fewer than 10 people",
        C("equity", "eq", "yes"),
        C("team_size", "lt", 10),
    ),
    Q(
        "posted since March, Kubernetes + Terraform",
        C("posted_on", "gte", "2025-03-01"),
        C("skills", "eq", "Kubernetes"),
        C("skills", "eq", "Terraform"),
    ),
    Q("German-speaking jobs in Hamburg", C("language", "eq", "German"), C("city", "eq", "Hamburg")),
    Q(
        "max 2 years of experience required, SQL",
        C("years_experience", "lte", 2),
        C("skills", "eq", "SQL"),
    ),
    Q("golang jobs asking for 5+ years experience", C("skills", "eq", "Go"), C("years_experience", "gte", 5)),
    Q("lead or principal roles, 150k+", C("seniority", "in", ["Lead", "Principal"]), C("salary", "gte", 150000)),
    Q(
        "salary between 50k and 70k, full-time, Madrid",
        C("salary", "gte", 50000),
        C("salary", "lte", 70000),
        C("employment_type", "eq", "Full-time"),
        C("city", "eq", "Madrid"),
    ),
    Q(
        "jobs in the US paying at least $130,000 with visa sponsorship",
        C("country", "eq", "United States"),
        C("salary", "gte", 130000),
        C("visa_sponsorship", "eq", True),
        opt=[C("currency", "eq", "USD")],
    ),
    Q(
        "£60k+ product manager jobs",
        C("salary", "gte", 60000),
        C("title", "eq", "Product Manager"),
        opt=[C("currency", "eq", "GBP")],
    ),
    Q("data analyst jobs with pay up to 55k", C("title", "eq", "Data Analyst"), C("salary", "lte", 55000)),
    Q("jobs posted this year in Canada", C("posted_on", "eq", "2025"), C("country", "eq", "Canada")),
    Q("postings from before April", C("posted_on", "lt", "2025-04-01")),
    Q(
        "security engineer jobs except in the US",
        C("title", "eq", "Security Engineer"),
        X(C("country", "ne", "United States"), "United States"),
    ),
    Q("remote jobs with no equity", C("remote", "eq", "remote"), X(C("equity", "eq", "no"), "yes")),
    Q(
        "SRE roles in Boston or Austin",
        C("title", "eq", "Site Reliability Engineer"),
        C("city", "in", ["Boston", "Austin"]),
    ),
    Q("what was posted yesterday?", C("posted_on", "eq", "2025-05-31")),
    Q(
        "Senior full stack, TypeScript and Node.js, at least 75k",
        C("seniority", "eq", "Senior"),
        C("title", "eq", "Full Stack Developer"),
        C("skills", "eq", "TypeScript"),
        C("skills", "eq", "Node.js"),
        C("salary", "gte", 75000),
    ),
    Q(
        "e-commerce or logistics jobs in the Netherlands",
        C("industry", "in", ["E-commerce", "Logistics"]),
        C("country", "eq", "Netherlands"),
    ),
    Q("roles at Novapath Technologies or Cobaltwave", C("company", "in", ["Novapath Technologies", "Cobaltwave"])),
    Q("well paid remote product designer jobs", C("remote", "eq", "remote"), C("title", "eq", "Product Designer")),
    Q("gaming studios with teams bigger than 20", C("industry", "eq", "Gaming"), C("team_size", "gt", 20)),
    Q(
        "last 7 days, pay 70-90k",
        ANY(C("posted_on", "gte", "2025-05-25"), C("posted_on", "gt", "2025-05-25")),
        C("salary", "gte", 70000),
        C("salary", "lte", 90000),
    ),
    Q(
        "QA jobs using Cypress under 50k",
        C("title", "eq", "QA Engineer"),
        C("skills", "eq", "Cypress"),
        C("salary", "lt", 50000),
    ),
    Q(
        "frontend jobs in Dublin that aren't contract roles",
        C("title", "eq", "Frontend Developer"),
        C("city", "eq", "Dublin"),
        X(C("employment_type", "ne", "Contract"), "Contract"),
    ),
    Q(
        "backend jobs that don't require Java",
        C("title", "eq", "Backend Engineer"),
        X(C("skills", "ne", "Java"), "Java"),
    ),
    NONE("how do I write a good cover letter?"),
    NONE("what does a site reliability engineer actually do?"),
    NONE("is 65k a good salary for a junior developer in Berlin?"),
    NONE("how long does visa sponsorship take in the Netherlands?"),
    NONE("can I apply to more than 3 jobs at the same company?"),
    NONE("what's it like to work at Brightloom?"),
    NONE("should I put Python or SQL first on my CV?"),
    NONE("what's the difference between contract and full-time for taxes in the UK?"),
    NONE("how do I delete my account"),
    NONE("thanks!"),
]

TRAILS = [
    Q(
        "easy loop trails under 10 km",
        C("difficulty", "eq", "Easy"),
        C("loop", "eq", True),
        C("length_km", "lt", 10),
    ),
    Q("dog friendly hikes in the Lake District", C("dog_friendly", "eq", "yes"), C("region", "eq", "Lake District")),
    Q("hikes with at least 1,200 m of climbing", C("elevation_gain_m", "gte", 1200)),
    Q("under 5 hrs in the Dolomites", C("duration_h", "lt", 5), C("region", "eq", "Dolomites")),
    Q("trails in Norway or Slovenia", C("country", "in", ["Norway", "Slovenia"])),
    Q(
        "hard hikes outside Switzerland",
        ANY(C("difficulty", "eq", "Challenging"), C("difficulty", "in", ["Challenging", "Expert"])),
        X(C("country", "ne", "Switzerland"), "Switzerland"),
    ),
    Q("winter walks in the Black Forest", C("season", "eq", "Winter"), C("region", "eq", "Black Forest")),
    Q("summits above 3000 m", C("highlights", "eq", "Summit"), C("max_altitude_m", "gt", 3000)),
    Q("trails reviewed since March", C("last_reviewed", "gte", "2025-03-01")),
    Q("rated 4.5+ with a waterfall", C("rating", "gte", 4.5), C("highlights", "eq", "Waterfall")),
    Q(
        "trails in Valais where dogs are not allowed",
        C("region", "eq", "Valais"),
        X(C("dog_friendly", "eq", "no"), "yes"),
    ),
    Q("point to point routes longer than 20 km", C("loop", "eq", False), C("length_km", "gt", 20)),
    Q("not a loop, with a mountain hut", X(C("loop", "eq", False), True), C("highlights", "eq", "Mountain hut")),
    Q(
        "Bavarian Alps hikes I can reach by public transport",
        C("region", "eq", "Bavarian Alps"),
        C("public_transport", "eq", True),
    ),
    Q("trails added by Sophie Brandt", C("added_by", "eq", "Sophie Brandt")),
    Q("paved paths under 5km", C("surface", "eq", "Paved"), C("length_km", "lt", 5)),
    Q("gravel or dirt trails, moderate", C("surface", "in", ["Gravel", "Dirt"]), C("difficulty", "eq", "Moderate")),
    Q(
        "expert routes with more than 1500m elevation gain",
        C("difficulty", "eq", "Expert"),
        C("elevation_gain_m", "gt", 1500),
    ),
    Q(
        "less than 500 m ascent and shorter than 8 km",
        C("elevation_gain_m", "lt", 500),
        C("length_km", "lt", 8),
    ),
    Q(
        "between 10 and 15 km in the Scottish Highlands",
        C("length_km", "gte", 10),
        C("length_km", "lte", 15),
        C("region", "eq", "Scottish Highlands"),
    ),
    Q("hikes from 3 to 5 hours", C("duration_h", "gte", 3), C("duration_h", "lte", 5)),
    Q("kid friendly walks, max 2 hours", C("duration_h", "lte", 2)),
    Q("glacier views in the Bernese Oberland", C("highlights", "eq", "Glacier"), C("region", "eq", "Bernese Oberland")),
    Q("graubunden ridge walks", C("region", "eq", "Graubünden"), C("highlights", "eq", "Ridge")),
    Q(
        "Saxon Switzerland trails with a castle",
        C("region", "eq", "Saxon Switzerland"),
        C("highlights", "eq", "Castle"),
    ),
    Q("spring hikes on Mallorca or Madeira", C("season", "eq", "Spring"), C("region", "in", ["Mallorca", "Madeira"])),
    Q("trails with more than 500 reviews", C("review_count", "gt", 500)),
    Q("top rated trails in Italy, 4.8 or better", C("rating", "gte", 4.8), C("country", "eq", "Italy")),
    Q(
        "no rocky trails please, Austria, dog-friendly",
        X(C("surface", "ne", "Rocky"), "Rocky"),
        C("country", "eq", "Austria"),
        C("dog_friendly", "eq", "yes"),
    ),
    Q("hikes that top out below 1000 m", C("max_altitude_m", "lt", 1000)),
    Q("trails last reviewed before 2024", C("last_reviewed", "lt", "2024")),
    Q(
        "reviewed in the past month, Julian Alps",
        ANY(C("last_reviewed", "gte", "2025-05-01"), C("last_reviewed", "gt", "2025-05-01")),
        C("region", "eq", "Julian Alps"),
    ),
    Q(
        "easy or moderate loops under 12 km in the Dolomites",
        C("difficulty", "in", ["Easy", "Moderate"]),
        C("loop", "eq", True),
        C("length_km", "lt", 12),
        C("region", "eq", "Dolomites"),
    ),
    Q("autumn hikes around Chamonix", C("season", "eq", "Autumn"), C("region", "eq", "Chamonix")),
    Q(
        "Picos de Europa, no more than 900 m of climb",
        C("region", "eq", "Picos de Europa"),
        C("elevation_gain_m", "lte", 900),
    ),
    Q("wildflower walks that take at most 3 hrs", C("highlights", "eq", "Wildflowers"), C("duration_h", "lte", 3)),
    Q("long hikes through a gorge", C("highlights", "eq", "Gorge")),
    Q(
        "challenging trails over 2500m in Valais or the Aosta Valley",
        C("difficulty", "eq", "Challenging"),
        C("max_altitude_m", "gt", 2500),
        C("region", "in", ["Valais", "Aosta Valley"]),
    ),
    Q(
        "viewpoints in France, except Provence",
        C("highlights", "eq", "Viewpoint"),
        C("country", "eq", "France"),
        X(C("region", "ne", "Provence"), "Provence"),
    ),
    Q("Magnus Haugen's trails", C("added_by", "eq", "Magnus Haugen")),
    NONE("what should I pack for a 6 hour hike?"),
    NONE("how do I avoid blisters on long descents?"),
    NONE("is it safe to hike alone in the Dolomites?"),
    NONE("what does 'Expert' difficulty mean on this site?"),
    NONE("how much water do I need for 1,000 m of elevation gain?"),
    NONE("do I need crampons in the Alps in May?"),
    NONE("how do I upload a GPX track?"),
    NONE("can I bring my dog on the ferry to Lofoten?"),
    NONE("thank you!"),
]

CASES: dict[str, list[Case]] = {"cars": CARS, "jobs": JOBS, "trails": TRAILS}
