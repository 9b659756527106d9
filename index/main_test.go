package index

// testOpts are the options of the tests' indexes: their graphs of
// learned-model vectors are built from testLearnedEfConstruction
// candidates, wide enough for their recall checks against exact search
// and a quarter of the product's work under -race. Tests of the
// product's own lists use Options{}.
var testOpts = Options{EfConstruction: testLearnedEfConstruction}

// testLearnedEfConstruction is the narrower list the tests' graphs of
// learned-model vectors build from (see Options.EfConstruction).
const testLearnedEfConstruction = 48
