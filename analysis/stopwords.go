package analysis

import (
	"strings"

	snowen "github.com/kljensen/snowball/english"
	snowfr "github.com/kljensen/snowball/french"
	snowhu "github.com/kljensen/snowball/hungarian"
	snowno "github.com/kljensen/snowball/norwegian"
	snowru "github.com/kljensen/snowball/russian"
	snowes "github.com/kljensen/snowball/spanish"
	snowsv "github.com/kljensen/snowball/swedish"
)

// Stop words are the function words of a language: so frequent that they
// say nothing about what a passage is about, and dropping them keeps
// posting lists short and adjacent-term pairs meaningful. Where the
// kljensen/snowball package carries the Snowball project's list for a
// language, that list is used (English's is the one docsift always used);
// for the others, the lists below are this project's: the articles,
// pronouns, prepositions, conjunctions and auxiliaries that top those
// languages' word frequency tables, kept short on purpose, since a missing
// stop word only costs a little speed (BM25's IDF already makes it weigh
// nearly nothing) while a wrong one makes a word unfindable.
var stopFuncs = [NumLangs]func(string) bool{
	English: snowen.IsStopWord, French: snowfr.IsStopWord, Spanish: snowes.IsStopWord,
	Swedish: snowsv.IsStopWord, Norwegian: snowno.IsStopWord,
	Hungarian: snowhu.IsStopWord, Russian: snowru.IsStopWord,
}

var stopLists = [NumLangs]string{
	German: `der die das den dem des ein eine einer eines einem einen und oder aber
		auch als an am auf aus bei bis durch für gegen in im ins mit nach über um
		unter von vor zu zum zur ist sind war waren wird werden wurde wurden hat
		haben hatte hatten kann können nicht noch nur so wie wenn dass daß es er
		sie ich du wir ihr man sich seine ihre mein dein unser dieser diese dieses
		welche welcher welches was wer wo da dann denn doch ob schon sehr hier
		dort alle allem allen aller alles kein keine keinen zwischen ohne sowie`,
	Dutch: `de het een en of maar ook als aan op uit bij tot door voor tegen in
		met na over om onder van naar te is zijn was waren wordt worden werd
		werden heeft hebben had hadden kan kunnen niet nog zo hoe wanneer dat die
		dit deze er hij zij ze ik jij je wij we jullie men zich haar mijn ons hun
		wat wie waar dan want toch al hier daar alle geen zonder`,
	Italian: `il lo la i gli le un uno una di a da in con su per tra fra e ed o ma
		anche come se che chi cui non è sono era erano essere ha hanno avere
		aveva del dello della dei degli delle al allo alla ai agli alle dal dallo
		dalla dai dagli dalle nel nello nella nei negli nelle sul sullo sulla sui
		sugli sulle questo questa questi queste quello quella quelli quelle io tu
		lui lei noi voi loro mi ti si ci vi suo sua suoi sue mio mia`,
	Portuguese: `o a os as um uma uns umas de do da dos das em no na nos nas por
		pelo pela pelos pelas para com sem sob sobre entre e ou mas também como se
		que quem qual não é são era eram ser foi foram tem têm ter está estão ao
		aos à às este esta estes estas esse essa esses essas isso isto aquele
		aquela ele ela eles elas eu tu nós você seu sua seus suas meu minha`,
	Danish: `og i jeg det at en den til er som på de med han af for ikke der var
		mig sig men et har om vi min havde ham hun nu over da fra du ud sin dem os
		op man hans hvor eller hvad skal selv her alle vil blev kunne ind når være
		noget ville deres efter denne end dette mit også under have dig hende`,
	Finnish: `ja on ei se että hän oli ovat olla kun mutta tai jos kuin myös vain
		niin sekä joka jotka mikä mitä tämä nämä tuo ne me te he minä sinä sen
		sitä siitä siinä kanssa ole olen olet olemme olivat ollut`,
	Romanian: `și şi în la de cu pe din pentru că este sunt a fost nu o un una unei
		unui ale al lui ei el ea ce care sau dar mai ca se să fi au avea acest
		această aceste acesta`,
	Turkish: `ve bir bu da de ile için gibi daha çok en ama veya ya ne o şu her ki
		mi mı mu mü olarak olan var yok değil ise kadar sonra önce`,
	Arabic: `في من على الى إلى عن ان أن إن او أو ما لا لم لن هذا هذه ذلك تلك التي
		الذي الذين كان كانت قد ثم مع كل بين هو هي هم نحن انا أنا عند اذا إذا
		حتى بعد قبل ايضا أيضا غير اي أي منذ لقد وقد هل`,
}

// stopSets are stopLists as sets, each word also in its folded (and for
// Arabic, normalised) spelling, so that a word typed without accents is
// recognised as the stop word it is.
var stopSets = func() [NumLangs]map[string]bool {
	var sets [NumLangs]map[string]bool
	for l, list := range stopLists {
		if list == "" {
			continue
		}
		set := map[string]bool{}
		for _, w := range strings.Fields(list) {
			w = compose(w)
			if Lang(l) == Arabic {
				w = arabicNormalize(w)
			}
			set[w] = true
			set[fold(w)] = true
		}
		sets[l] = set
	}
	return sets
}()

// isStop reports whether w (lower case, composed; Arabic normalised) is a
// stop word of lang.
func isStop(lang Lang, w string) bool {
	if lang >= NumLangs {
		return false
	}
	if f := stopFuncs[lang]; f != nil {
		return f(w)
	}
	return stopSets[lang][w]
}
