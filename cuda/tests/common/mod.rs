pub mod double;
