package analysis

import (
	"fmt"
	"strings"
	"testing"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"One. Two! Three?", []string{"One.", "Two!", "Three?"}},
		{"One. Two! Three? four", []string{"One.", "Two!", "Three? four"}},
		{"Pi is 3.14 today. See e.g. the docs. Next", []string{"Pi is 3.14 today.", "See e.g. the docs.", "Next"}},
		{"Dr. Smith met J. Doe. They talked.", []string{"Dr. Smith met J. Doe.", "They talked."}},
		{`He said "stop." Then left.`, []string{`He said "stop."`, "Then left."}},
		{"Heading\n\nBody text here", []string{"Heading", "Body text here"}},
		{"Heading  \n \nBody text here  ", []string{"Heading", "Body text here"}},
		{"line one\nline two", []string{"line one\nline two"}},
		{"  ", nil},
		// Ordinals, abbreviations and numbers after a stop go on.
		{"Sie muss bis zum 31. Juli 2025 eingereicht werden. Danach nicht.", []string{"Sie muss bis zum 31. Juli 2025 eingereicht werden.", "Danach nicht."}},
		{"Er wohnt in Raum Nr. 12 im Haus. Der Bus braucht ca. 30 Minuten. Gut.", []string{"Er wohnt in Raum Nr. 12 im Haus.", "Der Bus braucht ca. 30 Minuten.", "Gut."}},
		{"Siehe z.B. den Anhang. Die U.S. Army kam um 8 a.m. an.", []string{"Siehe z.B. den Anhang.", "Die U.S. Army kam um 8 a.m. an."}},
		{"Die Lieferung kommt ca. Ende Mai. Gut.", []string{"Die Lieferung kommt ca. Ende Mai.", "Gut."}},
		{"Адрес: ул. Ленина, д. 5. Приходите.", []string{"Адрес: ул. Ленина, д. 5. Приходите."}},
		{"It was founded in 1998. The next year it grew. See Fig. 2 for more.", []string{"It was founded in 1998.", "The next year it grew.", "See Fig. 2 for more."}},
		{"1. Install it. 2. Run it. 3) Stop it.", []string{"1. Install it.", "2. Run it.", "3) Stop it."}},
		{"Was it good? 42 people said yes! 3 did not.", []string{"Was it good?", "42 people said yes!", "3 did not."}},
		{"It is described on page 19. 2. If the name does not match, stop.", []string{"It is described on page 19.", "2. If the name does not match, stop."}},
		{"Es gilt bis zum 31. 12. 2025 für alle.", []string{"Es gilt bis zum 31. 12. 2025 für alle."}},
		{"Edit app.js. Then run it.", []string{"Edit app.js.", "Then run it."}},
		{"Er traf\u00a0Dr. Müller.", []string{"Er traf\u00a0Dr. Müller."}},
		{"Paris is in France.[1] It has 2 million people.[3][4] Next", []string{"Paris is in France.[1]", "It has 2 million people.[3][4]", "Next"}},
		// Other scripts' stops.
		{"यह पहला वाक्य है। यह दूसरा है।", []string{"यह पहला वाक्य है।", "यह दूसरा है।"}},
		{"यह सच है। 2024 में चुनाव हुए।", []string{"यह सच है।", "2024 में चुनाव हुए।"}},
		{"هل أنت هنا؟ نعم.", []string{"هل أنت هنا؟", "نعم."}},
		// CJK text ends sentences with its own marks and no space after.
		{"这是第一句。这是第二句！第三句？", []string{"这是第一句。", "这是第二句！", "第三句？"}},
		{"他说：「好。」然后走了。", []string{"他说：「好。」", "然后走了。"}},
		{"什么？！真的", []string{"什么？！", "真的"}},
		{"日本語の文です｡次の文︒最後﹒", []string{"日本語の文です｡", "次の文︒", "最後﹒"}},
		{"版本３．１４发布了．下一句", []string{"版本３．１４发布了．", "下一句"}},
		{"I use Go!然后我们走了。", []string{"I use Go!", "然后我们走了。"}},
		// Scripts without letter case start sentences without a capital.
		{"안녕하세요. 반갑습니다.", []string{"안녕하세요.", "반갑습니다."}},
		// A text of stops and no spaces is one sentence, read once.
		{strings.Repeat(".", 10), []string{strings.Repeat(".", 10)}},
	}
	for _, tt := range tests {
		var got []string
		Sentences(tt.in, func(start, end int) { got = append(got, tt.in[start:end]) })
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("Sentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
