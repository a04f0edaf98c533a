// Given names, family-name endings, function words and place words of the languages the
// person detector reads beyond English, typed for this package from general knowledge of
// each language (the commonest names of each country, as any registry's top list has them;
// facts, not creative work). They are kept apart from the corpus generator's lists
// (corpus/generate-locales.mjs), and `bench/pii-measure.mjs` prints how many generated names
// these lists also hold, so a reader can tell what the figures owe to the lists.

const words = (text: string) => text.split(/\s+/).filter((word) => word.length > 0);

/** Given names of German, French, Spanish, Italian, Dutch, Swedish, Polish and Japanese (romaji) speakers, lower case. */
export const GIVEN_NAMES_I18N = new Set(
  words(`
  hans peter klaus wolfgang jürgen dieter uwe werner günter horst helmut stefan thomas
  andreas michael frank markus christian sebastian tobias florian jan lukas felix jonas leon
  maximilian moritz paul niklas tim finn lena hannah lea leonie marie sophie johanna katharina
  sabine petra monika ursula renate gabriele claudia birgit heike anja susanne kerstin silke
  ute jutta ingrid gisela brigitte hildegard elke dagmar anke nadine janina franziska
  jean pierre michel philippe alain jacques bernard françois nicolas olivier sébastien julien
  antoine mathieu guillaume benoît thierry pascal didier yves hugo théo louis gabriel arthur
  raphaël baptiste quentin marie nathalie isabelle sylvie catherine françoise valérie sandrine
  céline aurélie émilie camille chloé manon léa inès juliette margaux océane élodie mélanie
  josé antonio manuel francisco juan javier carlos jesús miguel rafael pedro ángel pablo sergio
  jorge fernando luis alberto álvaro diego adrián raúl enrique ramón vicente andrés joaquín
  maría carmen josefa isabel dolores pilar teresa ana francisca laura cristina marta lucía
  paula elena sara raquel beatriz nuria silvia patricia mercedes rosario montserrat
  giuseppe giovanni francesco mario luigi paolo marco andrea alessandro matteo stefano
  roberto massimo davide simone riccardo federico luca fabio gianluca emanuele salvatore
  vincenzo antonella giuseppina rosa angela giovanna anna teresa lucia maria francesca chiara
  giulia sara alessia martina elisa valentina federica silvia paola elena simona
  jan pieter johannes cornelis hendrik willem gerrit dirk jeroen sander thijs ruben daan
  sem luuk milan stijn niels koen bas tom rik mark
  emma julia tess sophie fleur lotte eva iris lisa roos anne ingrid marieke annemieke
  erik lars anders johan per karl nils magnus mikael fredrik henrik gustav björn sven olof
  emil elias william liam noah lucas alexander filip isak leo
  anna eva maria kristina karin sara emma maja alice astrid ingrid ida freja wilma klara
  stina sofia frida agnes
  piotr krzysztof andrzej tomasz paweł michał marcin jakub łukasz adam mateusz kamil dawid
  marek jacek robert rafał jerzy tadeusz zbigniew stanisław józef
  anna maria ewa joanna magdalena barbara krystyna elżbieta monika aleksandra natalia julia
  marta beata dorota jolanta karolina weronika justyna paulina iwona
  hiroshi takashi kenji yuki akira satoshi kazuki ryota haruto sota yuto ren riku hinata
  yuto koki naoki tatsuya
  yoko keiko tomoko akiko yumiko naomi yuko emi aoi yuna mei rin hina mio saki nanami
  `),
);

/**
 * Family names common enough in these countries to count as known, lower case, including the
 * commonest Japanese family names in romaji and Chinese and Korean family names in their Latin
 * spellings.
 */
export const FAMILY_NAMES_I18N = new Set(
  words(`
  müller schmidt schneider fischer weber meyer wagner becker schulz hoffmann schäfer koch
  bauer richter klein wolf schröder neumann schwarz zimmermann braun krüger hofmann hartmann
  lange schmitt werner schmitz krause meier lehmann schmid schulze maier köhler herrmann
  martin bernard dubois thomas robert richard petit durand leroy moreau simon laurent lefebvre
  michel garcía david bertrand roux vincent fournier morel girard andré mercier dupont lambert
  bonnet françois martinez legrand
  garcía rodríguez gonzález fernández lópez martínez sánchez pérez gómez martín jiménez ruiz
  hernández díaz moreno muñoz álvarez romero alonso gutiérrez navarro torres domínguez vázquez
  ramos gil ramírez serrano blanco molina morales suárez ortega delgado castro ortiz rubio
  rossi russo ferrari esposito bianchi romano colombo ricci marino greco bruno gallo conti
  de luca mancini costa giordano rizzo lombardi moretti barbieri fontana santoro mariani
  rinaldi caruso ferrara galli martini leone longo gentile martinelli vitale lombardo serra
  de jong jansen de vries van den berg van dijk bakker janssen visser smit meijer de boer
  mulder de groot bos vos peters hendriks van leeuwen dekker brouwer de wit dijkstra smits
  andersson johansson karlsson nilsson eriksson larsson olsson persson svensson gustafsson
  pettersson jonsson jansson hansson bengtsson jönsson lindberg jakobsson magnusson lindström
  olofsson lindqvist lindgren axelsson berg bergström lundberg lind lundgren lundqvist
  nowak kowalski wiśniewski wójcik kowalczyk kamiński lewandowski zieliński szymański woźniak
  dąbrowski kozłowski jankowski mazur wojciechowski kwiatkowski krawczyk kaczmarek piotrowski
  grabowski
  sato suzuki takahashi tanaka watanabe ito yamamoto nakamura kobayashi kato yoshida yamada
  sasaki yamaguchi matsumoto inoue kimura hayashi shimizu yamazaki mori abe ikeda hashimoto
  wang li zhang liu chen yang huang zhao wu zhou xu sun ma zhu hu guo he lin luo zheng liang
  kim lee park choi jung kang cho yoon jang lim han oh seo shin kwon hwang ahn song
  `),
);

/**
 * Endings of family names by language (`-ström`, `-ski`, `-ez`, `-ini`…): a capitalised word
 * that ends so is likely a family name. Longest first is not needed: any match counts.
 */
export const FAMILY_NAME_ENDINGS: readonly string[] = words(`
  sson son sen ström strom qvist kvist berg gren lund holm dahl blad
  ski ska cki cka dzki dzka wicz owicz ewicz czyk czak iak ak ek
  mann maier meier bauer müller hofer huber ner inger ler
  ez az oz es
  ini elli etti otti ucci acci ano ino one oni esi ese
  eau aux ier ière ault ard ot et in
  ink ers sma stra ema ijn
  ová ov ova ev eva enko uk
  moto mura yama kawa naka hashi saki gawa shita ta da no be
`);

/**
 * Words that open a capitalised run in other languages but are no name: articles, pronouns,
 * possessives, prepositions and courtesy words (German capitalises nouns, so its common nouns
 * of support mail are here too).
 */
export const FUNCTION_WORDS_I18N = new Set(
  words(`
  der die das den dem des ein eine einen einem einer ihr ihre ihren ihrem ihrer sie es wir
  unser unsere mein meine dein deine sein seine bitte sehr mit von für bei auf aus nach vor
  über unter zum zur im am ins vom beim herzliche freundliche grüße gruß bestellung lieferung
  rechnung kasse ticket kunde kundin betreff ersatzlieferung erstattung sendung paket
  le la les un une des du de mon ma mes ton ta tes son sa ses notre nos votre vos leur leurs
  ce cet cette ces bonjour merci madame monsieur objet commande colis livraison
  el los las una unos unas su sus mi mis tu tus nuestro nuestra vuestro este esta estos
  hola gracias señor señora asunto pedido envío
  il lo gli uno una mio mia tuo tua suo sua nostro nostra vostro questo questa
  grazie signor signora oggetto ordine
  het een mijn uw ons onze jouw zijn haar deze dit dat beste geachte onderwerp bestelling
  den det en ett min mitt din ditt vår våra er era denna detta hej ämne beställning
  mój moja moje twój twoja nasz nasza wasz pan pani temat zamówienie dzień dobry
  at in on of to for from into onto per via and or but if then than that which whose when
  where while after before during since until about above below between
  `),
);

/** Places that look like names when capitalised: cities, regions and their parts. */
export const PLACE_WORDS = new Set(
  words(`
  salt lake city milton keynes bad homburg le mans santa cruz reggio emilia den haag
  västra frölunda zielona góra kita ward san francisco los angeles las vegas new york
  buenos aires rio janeiro hong kong costa rica puerto sierra leone
  amsterdam rotterdam utrecht berlin hamburg münchen köln frankfurt stuttgart düsseldorf
  paris lyon marseille toulouse nantes strasbourg madrid barcelona sevilla valencia bilbao
  roma milano napoli torino firenze bologna stockholm göteborg malmö uppsala warszawa kraków
  gdańsk wrocław poznań tokyo osaka kyoto nagoya yokohama london manchester bristol leeds
  cardiff dublin edinburgh glasgow oxford cambridge boston chicago houston seattle denver
  austin dallas portland phoenix atlanta miami brooklyn queens
  `),
);

/** Words after a capitalised run that make it an organisation or a product, not a person. */
export const ORGANISATION_WORDS = new Set(
  words(`
  inc inc. ltd ltd. llc plc gmbh ag kg se sa s.a. sas sarl spa s.p.a. srl bv nv ab oy as asa
  corp corporation company co group bank holdings partners labs studio systems solutions
  university college school hospital clinic foundation institute association
  street road avenue lane drive straße strasse weg platz rue avenue calle via straat gatan
  `),
);

/** Brands and words of company names that a capitalised pair shares with names. */
export const BRAND_WORDS = new Set(
  `google microsoft apple amazon chrome teams windows office outlook slack zoom excel word
  android iphone ipad macbook safari firefox edge linux ubuntu oracle salesforce shopify
  stripe paypal visa mastercard netflix spotify uber airbnb tesla samsung sony nokia intel
  deutsche national royal general united international global federal central american
  british french german spanish italian dutch swedish polish japanese chinese korean
  european euro bank post poste poczta telekom airlines airways railway rail sync desk
  agent build cloud studio`.split(/\s+/),
);

/**
 * Words of places of business, events, titles and reports that follow or precede a name-like
 * word in a firm's or a thing's name ("Luxury Palace", "Travel Agency", "Young Faculty Award",
 * "Associate Director", "Grant Date"): a run holding one is not a person.
 */
export const BUSINESS_WORDS = new Set(
  `hotel hotels inn suites suite resort resorts retreat palace lodge boutique café cafe cafes
  restaurant restaurants bistro brasserie trattoria pizzeria bar pub grill kitchen bakery
  diner tavern hostel apartments rentals rental agency agencies travel tours tour cruise
  cruises airline airlines class classes course courses school academy award awards prize
  prizes fund funds foundation scholarship fellowship conference summit festival expo
  director associate officer president vice chief head lead engineer analyst consultant
  assistant coordinator specialist supervisor executive partner chair committee board
  council department division unit quarter quarterly annual fourth third second first
  announces announced launches launched reports results earnings revenue date dates target
  value values total summary schedule itinerary agenda vacation holiday trip meeting
  companies company harbor harbour beach bay island mount museum gallery theatre theater
  stadium arena tower bridge station airport`.split(/\s+/),
);
