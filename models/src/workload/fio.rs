//! fio-like load (todo).
