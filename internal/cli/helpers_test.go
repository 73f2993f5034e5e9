package cli

import "regexp"

func anyMatch(pattern string, lines []string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}
