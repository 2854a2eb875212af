package core

// PrefixNumber names a rented number.
const PrefixNumber = "num_"
