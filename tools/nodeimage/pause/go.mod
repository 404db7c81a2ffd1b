module tfk8s.local/pause

go 1.22
