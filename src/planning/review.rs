//! The review of a draft as a pure state machine: the menu's choices and the approval
//! contract's questions as data, once for both front ends. `tick review` (and `tick plan` at a
//! terminal) drives it through the person's answers; the session maps its keys onto the same
//! inputs. No I/O here: the caller asks [`Review::asking`] (a terminal puts it to the person
//! with [`ask`]), feeds the answer to [`Review::answer`], and carries out the [`Action`] it
//! gets back.
//!
//! The contract's questions start from the draft's own approval settings (its front matter's
//! `approval:`), and the last question offers to commit the task folder.

use super::approve::Contract;
use crate::person::Person;
use crate::tasks::plan_md::Approval;

/// Where the contract's questions start: the draft's own approval settings, if it has any.
pub fn defaults(approval: Option<&Approval>) -> Contract {
    approval.map_or_else(Contract::default, |a| Contract {
        allow_deviation: a.allow_deviation,
        max_files_changed: a.max_files_changed,
        commit_steps: a.commit_steps,
    })
}

/// One choice of the review menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Approve,
    Revise,
    Edit,
    Discard,
    Keep,
    Print,
    Help,
}

/// Every choice with its letter, its menu label, the session's label (`None`: not offered in
/// the session) and its line of help.
pub const CHOICES: [(Choice, char, &str, Option<&str>, &str); 7] = [
    (
        Choice::Approve,
        'a',
        "[a]pprove",
        Some("[a]pprove"),
        "approve: the draft becomes a task (you choose the run's limits next)",
    ),
    (
        Choice::Revise,
        'r',
        "[r]evise",
        Some("[r]evise"),
        "revise: tell the planner what should change",
    ),
    (
        Choice::Edit,
        'e',
        "[e]dit",
        Some("[e]dit in $EDITOR"),
        "edit: open the draft in $EDITOR; it is checked when you close it",
    ),
    (
        Choice::Discard,
        'd',
        "[d]iscard",
        Some("[d]iscard"),
        "discard: throw the draft away (asks first)",
    ),
    (
        Choice::Keep,
        'k',
        "[k]eep",
        Some("[k]eep"),
        "keep: leave the draft for later (`tick review` comes back here)",
    ),
    (
        Choice::Print,
        'p',
        "[p]rint",
        Some("[p]lan in full"),
        "print the plan again",
    ),
    (Choice::Help, '?', "[?]help", None, "this help"),
];

impl Choice {
    /// The choice a letter picks (either case).
    pub fn from_letter(letter: char) -> Option<Choice> {
        let letter = letter.to_ascii_lowercase();
        CHOICES
            .iter()
            .find(|(_, l, ..)| *l == letter)
            .map(|(choice, ..)| *choice)
    }
}

/// The letters of the menu, for a person who picks one key.
pub fn letters() -> Vec<char> {
    CHOICES.iter().map(|(_, letter, ..)| *letter).collect()
}

/// The menu as `tick review` asks it.
pub fn menu_prompt() -> String {
    let labels: Vec<&str> = CHOICES.iter().map(|(_, _, label, ..)| *label).collect();
    format!("{}: ", labels.join(" "))
}

/// The menu as the session shows it.
pub fn session_menu() -> String {
    let labels: Vec<&str> = CHOICES.iter().filter_map(|(_, _, _, s, _)| *s).collect();
    labels.join("  ")
}

/// The menu's help, one line a choice.
pub fn help() -> String {
    let lines: Vec<String> = CHOICES
        .iter()
        .map(|(_, letter, _, _, help)| format!("  {letter}  {help}"))
        .collect();
    lines.join("\n")
}

/// What the review asks before it discards the draft (no by default).
pub const DISCARD_QUESTION: &str = "discard the draft?";

/// The approval contract's questions, in the order they are asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    AllowDeviation,
    MaxFiles,
    CommitSteps,
    CommitFolder,
}

impl Question {
    /// The question itself; [`Form::prompt`] adds the default.
    pub fn text(self) -> &'static str {
        match self {
            Question::AllowDeviation => {
                "may the run change files outside a step's `files` without pausing?"
            }
            Question::MaxFiles => "stop the run after how many changed files?",
            Question::CommitSteps => "commit each verified step when the task runs?",
            Question::CommitFolder => "commit the approved task folder now?",
        }
    }

    /// Whether the answer is a number (typed, then Enter) rather than yes or no.
    pub fn wants_number(self) -> bool {
        self == Question::MaxFiles
    }
}

/// The contract being asked: the question now and the answers so far (the draft's own
/// settings until answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    pub question: Question,
    pub contract: Contract,
    pub commit_folder: bool,
}

impl Form {
    /// The first question, every answer at the draft's own setting.
    pub fn new(defaults: Contract) -> Form {
        Form {
            question: Question::AllowDeviation,
            contract: defaults,
            commit_folder: false,
        }
    }

    /// The default of the question asked now (a yes/no one).
    pub fn default_yes(&self) -> bool {
        match self.question {
            Question::AllowDeviation => self.contract.allow_deviation,
            Question::CommitSteps => self.contract.commit_steps,
            Question::MaxFiles | Question::CommitFolder => false,
        }
    }

    /// The question with its default: `[y/N]`, `[Y/n]`, or the limit (`[no limit]`, `[12]`).
    pub fn prompt(&self) -> String {
        let shown = if self.question.wants_number() {
            self.contract
                .max_files_changed
                .map_or_else(|| "[no limit]".to_owned(), |n| format!("[{n}]"))
        } else if self.default_yes() {
            "[Y/n]".to_owned()
        } else {
            "[y/N]".to_owned()
        };
        format!("{} {shown}", self.question.text())
    }
}

/// Where the review is: what the person is asked now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// The menu.
    Menu,
    /// One of the contract's questions.
    Contract(Form),
    /// Discard the draft? (no by default)
    ConfirmDiscard,
    /// What should change (a line of text).
    Revise,
}

/// An answer from the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A key (a menu letter, `y`, `n`).
    Key(char),
    /// Enter alone: the question's default (the menu has none).
    Enter,
    /// A line of text (the feedback, the limit).
    Text(String),
    /// Back out of what is asked (Esc): a question returns to the menu, the menu keeps the
    /// draft.
    Back,
}

impl Answer {
    /// A yes or a no, as its key.
    pub fn yes(yes: bool) -> Answer {
        Answer::Key(if yes { 'y' } else { 'n' })
    }
}

/// What the caller carries out after an answer; the review then asks [`Review::asking`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing: ask what [`Review::asking`] says (the next question, the menu again).
    Ask,
    /// The answer was not one; say this and ask again.
    Invalid(String),
    /// Approve with this contract, and commit the task folder when `commit_folder`.
    Approve {
        contract: Contract,
        commit_folder: bool,
    },
    /// Plan again with this feedback.
    Revise(String),
    /// The feedback was empty: nothing to revise, back to the menu.
    NothingToRevise,
    Edit,
    Discard,
    /// Discarding was declined.
    KeptDraft,
    /// The review ends with the draft kept for later.
    Keep,
    Print,
    Help,
}

/// The planning a review leads to (or a planning run starts from, in `tick plan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    New { goal: String, replace: bool },
    Revise(String),
    Answer(String),
}

/// One review of a draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Review {
    asking: Asking,
    /// The draft's own approval settings: where the contract's questions start.
    defaults: Contract,
}

impl Review {
    /// A review at its menu, for a draft whose front matter approves with `defaults`.
    pub fn new(defaults: Contract) -> Review {
        Review {
            asking: Asking::Menu,
            defaults,
        }
    }

    /// A review asking `asking` now (the session keeps it in its prompt between keys).
    pub fn at(asking: Asking, defaults: Contract) -> Review {
        Review { asking, defaults }
    }

    /// What the person is asked now.
    pub fn asking(&self) -> Asking {
        self.asking
    }

    /// Takes the person's answer to what is asked now.
    pub fn answer(&mut self, answer: Answer) -> Action {
        match self.asking {
            Asking::Menu => self.menu(&answer),
            Asking::Contract(form) => self.contract(form, answer),
            Asking::ConfirmDiscard => {
                self.asking = Asking::Menu;
                match answer {
                    Answer::Key('y' | 'Y') => Action::Discard,
                    _ => Action::KeptDraft,
                }
            }
            Asking::Revise => match answer {
                Answer::Text(text) if !text.trim().is_empty() => {
                    self.asking = Asking::Menu;
                    Action::Revise(text.trim().to_owned())
                }
                Answer::Key(_) => Action::Ask,
                _ => {
                    self.asking = Asking::Menu;
                    Action::NothingToRevise
                }
            },
        }
    }

    fn menu(&mut self, answer: &Answer) -> Action {
        let choice = match answer {
            Answer::Key(letter) => Choice::from_letter(*letter),
            Answer::Back => Some(Choice::Keep),
            Answer::Enter | Answer::Text(_) => None,
        };
        match choice {
            None => Action::Ask,
            Some(Choice::Approve) => {
                self.asking = Asking::Contract(Form::new(self.defaults));
                Action::Ask
            }
            Some(Choice::Revise) => {
                self.asking = Asking::Revise;
                Action::Ask
            }
            Some(Choice::Discard) => {
                self.asking = Asking::ConfirmDiscard;
                Action::Ask
            }
            Some(Choice::Edit) => Action::Edit,
            Some(Choice::Keep) => Action::Keep,
            Some(Choice::Print) => Action::Print,
            Some(Choice::Help) => Action::Help,
        }
    }

    fn contract(&mut self, mut form: Form, answer: Answer) -> Action {
        if answer == Answer::Back {
            self.asking = Asking::Menu;
            return Action::Ask;
        }
        if form.question.wants_number() {
            let text = match answer {
                Answer::Text(text) => text.trim().to_owned(),
                Answer::Enter => String::new(),
                Answer::Key(_) | Answer::Back => return Action::Ask,
            };
            if !text.is_empty() {
                match text.parse::<u32>() {
                    Ok(n @ 1..) => form.contract.max_files_changed = Some(n),
                    _ => return Action::Invalid(format!("`{text}` is not a positive number")),
                }
            }
            form.question = Question::CommitSteps;
            self.asking = Asking::Contract(form);
            return Action::Ask;
        }
        let yes = match answer {
            Answer::Key('y' | 'Y') => true,
            Answer::Key('n' | 'N') => false,
            Answer::Enter => form.default_yes(),
            _ => return Action::Ask,
        };
        match form.question {
            Question::AllowDeviation => {
                form.contract.allow_deviation = yes;
                form.question = Question::MaxFiles;
            }
            Question::CommitSteps => {
                form.contract.commit_steps = yes;
                form.question = Question::CommitFolder;
            }
            Question::MaxFiles | Question::CommitFolder => {
                self.asking = Asking::Menu;
                return Action::Approve {
                    contract: form.contract,
                    commit_folder: yes,
                };
            }
        }
        self.asking = Asking::Contract(form);
        Action::Ask
    }
}

/// What the review asks now, put to `person`; `None` when their input ended at the menu.
/// Input that ends at a question backs out of it.
pub fn ask(person: &mut dyn Person, asking: Asking) -> Option<Answer> {
    let yes_no = |answer: Option<bool>| answer.map_or(Answer::Back, Answer::yes);
    Some(match asking {
        Asking::Menu => Answer::Key(person.choose(&menu_prompt(), &letters())?),
        Asking::Contract(form) if form.question.wants_number() => person
            .line(&format!("{} ", form.prompt()))
            .map_or(Answer::Back, Answer::Text),
        Asking::Contract(form) => yes_no(person.yes_no(form.question.text(), form.default_yes())),
        Asking::ConfirmDiscard => yes_no(person.yes_no(DISCARD_QUESTION, false)),
        Asking::Revise => Answer::Text(person.line("what should change? ").unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Contract {
        Contract {
            allow_deviation: true,
            max_files_changed: Some(9),
            commit_steps: true,
        }
    }

    fn key(c: char) -> Answer {
        Answer::Key(c)
    }

    fn text(t: &str) -> Answer {
        Answer::Text(t.to_owned())
    }

    /// Feeds `answers` from the menu and returns every action and where the review ends.
    fn drive(defaults: Contract, answers: Vec<Answer>) -> (Vec<Action>, Asking) {
        let mut review = Review::new(defaults);
        let actions = answers.into_iter().map(|a| review.answer(a)).collect();
        (actions, review.asking())
    }

    #[test]
    fn every_letter_picks_its_choice_in_either_case_and_nothing_else_does() {
        for (choice, letter, ..) in CHOICES {
            assert_eq!(Choice::from_letter(letter), Some(choice));
            assert_eq!(
                Choice::from_letter(letter.to_ascii_uppercase()),
                Some(choice)
            );
        }
        for other in ['x', 'y', 'n', ' ', '1', '/'] {
            assert_eq!(Choice::from_letter(other), None, "{other}");
        }
        assert_eq!(letters(), ['a', 'r', 'e', 'd', 'k', 'p', '?']);
    }

    #[test]
    fn the_menus_read_as_both_front_ends_show_them() {
        assert_eq!(
            menu_prompt(),
            "[a]pprove [r]evise [e]dit [d]iscard [k]eep [p]rint [?]help: "
        );
        assert_eq!(
            session_menu(),
            "[a]pprove  [r]evise  [e]dit in $EDITOR  [d]iscard  [k]eep  [p]lan in full"
        );
        insta::assert_snapshot!(help(), @r"
          a  approve: the draft becomes a task (you choose the run's limits next)
          r  revise: tell the planner what should change
          e  edit: open the draft in $EDITOR; it is checked when you close it
          d  discard: throw the draft away (asks first)
          k  keep: leave the draft for later (`tick review` comes back here)
          p  print the plan again
          ?  this help
        ");
    }

    #[test]
    fn the_menu_answers_each_choice() {
        let cases = [
            (key('e'), Action::Edit, Asking::Menu),
            (key('k'), Action::Keep, Asking::Menu),
            (Answer::Back, Action::Keep, Asking::Menu),
            (key('p'), Action::Print, Asking::Menu),
            (key('?'), Action::Help, Asking::Menu),
            (key('r'), Action::Ask, Asking::Revise),
            (key('d'), Action::Ask, Asking::ConfirmDiscard),
            (
                key('A'),
                Action::Ask,
                Asking::Contract(Form::new(defaults())),
            ),
            // No default on Enter; a letter that is no choice asks again.
            (Answer::Enter, Action::Ask, Asking::Menu),
            (key('x'), Action::Ask, Asking::Menu),
            (text("a"), Action::Ask, Asking::Menu),
        ];
        for (answer, action, asking) in cases {
            let (actions, ended) = drive(defaults(), vec![answer.clone()]);
            assert_eq!((actions, ended), (vec![action], asking), "{answer:?}");
        }
    }

    #[test]
    fn enter_takes_the_drafts_own_settings_and_the_folder_is_not_committed() {
        for defaults in [Contract::default(), defaults()] {
            let (actions, ended) = drive(
                defaults,
                vec![
                    key('a'),
                    Answer::Enter,
                    Answer::Enter,
                    Answer::Enter,
                    Answer::Enter,
                ],
            );
            assert_eq!(
                actions.last(),
                Some(&Action::Approve {
                    contract: defaults,
                    commit_folder: false
                })
            );
            assert_eq!(ended, Asking::Menu);
        }
    }

    #[test]
    fn each_answer_overrides_its_default() {
        let (actions, _) = drive(
            defaults(),
            vec![key('a'), key('n'), text("3"), key('N'), key('y')],
        );
        assert_eq!(
            actions,
            [
                Action::Ask,
                Action::Ask,
                Action::Ask,
                Action::Ask,
                Action::Approve {
                    contract: Contract {
                        allow_deviation: false,
                        max_files_changed: Some(3),
                        commit_steps: false,
                    },
                    commit_folder: true,
                },
            ]
        );
        let (actions, _) = drive(
            Contract::default(),
            vec![key('a'), key('Y'), text(" 12 "), key('y'), key('n')],
        );
        assert_eq!(
            actions.last(),
            Some(&Action::Approve {
                contract: Contract {
                    allow_deviation: true,
                    max_files_changed: Some(12),
                    commit_steps: true,
                },
                commit_folder: false,
            })
        );
    }

    #[test]
    fn the_prompts_show_the_defaults_of_the_draft() {
        let mut review = Review::new(defaults());
        review.answer(key('a'));
        let mut prompts = Vec::new();
        for answer in [Answer::Enter, Answer::Enter, Answer::Enter] {
            let Asking::Contract(form) = review.asking() else {
                panic!("{:?}", review.asking())
            };
            prompts.push(form.prompt());
            review.answer(answer);
        }
        let Asking::Contract(form) = review.asking() else {
            panic!()
        };
        prompts.push(form.prompt());
        assert_eq!(
            prompts,
            [
                "may the run change files outside a step's `files` without pausing? [Y/n]",
                "stop the run after how many changed files? [9]",
                "commit each verified step when the task runs? [Y/n]",
                "commit the approved task folder now? [y/N]",
            ]
        );
        let form = Form::new(Contract::default());
        assert_eq!(
            form.prompt(),
            "may the run change files outside a step's `files` without pausing? [y/N]"
        );
        let form = Form {
            question: Question::MaxFiles,
            ..form
        };
        assert_eq!(
            form.prompt(),
            "stop the run after how many changed files? [no limit]"
        );
    }

    #[test]
    fn a_limit_that_is_no_positive_number_is_asked_again() {
        for bad in ["0", "-1", "ten", "1.5"] {
            let mut review = Review::new(Contract::default());
            review.answer(key('a'));
            review.answer(key('n'));
            assert_eq!(
                review.answer(text(bad)),
                Action::Invalid(format!("`{bad}` is not a positive number"))
            );
            let Asking::Contract(form) = review.asking() else {
                panic!()
            };
            assert_eq!(form.question, Question::MaxFiles, "{bad}");
            // A key is not a number's answer (the session types digits into its line).
            assert_eq!(review.answer(key('y')), Action::Ask);
            // An empty line keeps the default.
            review.answer(text(""));
            let Asking::Contract(form) = review.asking() else {
                panic!()
            };
            assert_eq!(form.question, Question::CommitSteps);
            assert_eq!(form.contract.max_files_changed, None);
        }
    }

    #[test]
    fn a_yes_no_question_ignores_other_keys_and_back_returns_to_the_menu() {
        let mut review = Review::new(Contract::default());
        review.answer(key('a'));
        for other in [key('x'), text("yes")] {
            assert_eq!(review.answer(other), Action::Ask);
            assert!(matches!(
                review.asking(),
                Asking::Contract(Form {
                    question: Question::AllowDeviation,
                    ..
                })
            ));
        }
        for answers in [
            vec![Answer::Back],
            vec![key('y'), Answer::Back],
            vec![key('y'), Answer::Enter, Answer::Back],
            vec![key('y'), Answer::Enter, key('y'), Answer::Back],
        ] {
            let mut review = Review::new(Contract::default());
            review.answer(key('a'));
            let actions: Vec<Action> = answers.into_iter().map(|a| review.answer(a)).collect();
            assert!(actions.iter().all(|a| *a == Action::Ask), "{actions:?}");
            assert_eq!(review.asking(), Asking::Menu);
        }
        // Approving again starts from the draft's settings, not the answers backed out of.
        review.answer(key('y'));
        review.answer(Answer::Back);
        review.answer(key('a'));
        assert_eq!(
            review.asking(),
            Asking::Contract(Form::new(Contract::default()))
        );
    }

    #[test]
    fn discard_asks_first_and_only_yes_discards() {
        assert_eq!(
            drive(defaults(), vec![key('d'), key('y')]),
            (vec![Action::Ask, Action::Discard], Asking::Menu)
        );
        assert_eq!(
            drive(defaults(), vec![key('d'), key('Y')]).0[1],
            Action::Discard
        );
        for no in [key('n'), key('x'), Answer::Enter, Answer::Back, text("y")] {
            assert_eq!(
                drive(defaults(), vec![key('d'), no.clone()]),
                (vec![Action::Ask, Action::KeptDraft], Asking::Menu),
                "{no:?}"
            );
        }
    }

    #[test]
    fn revise_takes_a_line_and_an_empty_one_revises_nothing() {
        assert_eq!(
            drive(defaults(), vec![key('r'), text("  split S2 ")]),
            (
                vec![Action::Ask, Action::Revise("split S2".to_owned())],
                Asking::Menu
            )
        );
        for nothing in [text("  "), Answer::Enter, Answer::Back] {
            assert_eq!(
                drive(defaults(), vec![key('r'), nothing.clone()]),
                (vec![Action::Ask, Action::NothingToRevise], Asking::Menu),
                "{nothing:?}"
            );
        }
        // Keys are typed into the line: still asking.
        assert_eq!(
            drive(defaults(), vec![key('r'), key('x')]),
            (vec![Action::Ask, Action::Ask], Asking::Revise)
        );
    }
}
