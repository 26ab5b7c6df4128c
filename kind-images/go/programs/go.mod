module labsupport.local/kind-images/programs

go 1.26.0
