module github.com/sketchd/sketchd

go 1.26

require github.com/spaolacci/murmur3 v1.1.0
